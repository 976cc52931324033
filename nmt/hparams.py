"""Named groups of tensorflow/nmt settings (``--hparams_preset``); explicit flags win."""

from typing import Any, Dict, Iterable

PRESETS = {
    "acvi_paper": dict(
        num_units=256,
        encoder_type="bi",
        num_encoder_layers=2,
        num_decoder_layers=2,
        attention="luong",
        dropout=0.2,
        optimizer="sgd",
        learning_rate=1.0,
        num_train_steps=12000,
        decay_scheme="luong234",
        beam_width=10,
        infer_mode="beam_search",
    ),
    "iwslt15": dict(
        num_units=512,
        encoder_type="bi",
        num_encoder_layers=2,
        num_decoder_layers=2,
        attention="scaled_luong",
        dropout=0.2,
        optimizer="sgd",
        learning_rate=1.0,
        num_train_steps=12000,
        decay_scheme="luong234",
        beam_width=10,
    ),
}


def preset_values(preset: str, given: Iterable[str]) -> Dict[str, Any]:
    """The preset's settings for the flags not in ``given`` (explicit flags win)."""
    return {name: value for name, value in PRESETS.get(preset, {}).items() if name not in given}

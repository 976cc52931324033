"""Every context mechanism in every host: builds, trains (the loss falls on a fixed
batch), reports its KL where it has one, decodes with beam search through the host's
decoding entry, and survives a save and restore with the same training outputs and the
same beam-search results.

The mechanisms come from ``acvi_tf.registry``, so a new entry there is tested here in all
three hosts without a line of this file changing.
"""

import hosts
import numpy as np
import pytest
import tensorflow as tf

from acvi_tf import decoding, registry
from acvi_tf.compat import keras
from video_caption import data as vc_data

# Small sizes for the mechanisms' own networks; everything else at its default.
OPTIONS = dict(
    ved_options=dict(latent_dim=3),
    variational_options=dict(inference_units=4),
    seed=3,
)
# The mechanisms with no latent variable, whose KL per decoder step is zero; every other
# mechanism, a new one included, must report a non-zero KL.
WITHOUT_KL = ("sa", "structured")
# Training steps, after which the loss must be below 0.8 of its start. Over build seeds
# 5-20 the translator's VED loss is at most 0.75 of it after 25 steps, but between 0.69
# and 0.94 after 15 (with one initializer per weight, and with the shared one before).
STEPS = dict(summarizer=15, nmt=25, captioner=15)


def _loss(model, batch, step=0, training=True):
    """The model's training loss (``compute_loss``), its outputs and what it logs;
    without ``training`` the deterministic loss of the mean context."""
    out = model(batch, training=training)
    logs = model.compute_loss(batch, out, tf.constant(step, tf.int64))
    return logs[model.loss_key], out, logs


def _beam(host, model, batch, beam_size=2, max_steps=4):
    """Beam search of the batch through the shared decoding protocol (``start``,
    ``decode_step``; the summarizer's scores are probabilities and its options the
    batch's article OOVs and the coverage switch)."""
    options, probabilities = {}, False
    if host == "summarizer":
        constants, state = model.start(batch)
        options, probabilities = dict(max_art_oovs=1, coverage_on=True), True
        start_stop = (2, 3)  # [START], [STOP] in See's vocabulary
    else:
        inputs = ("src", "src_len") if host == "nmt" else ("features", "num_frames")
        constants, state = model.start(*(batch[name] for name in inputs))
        start_stop = (1, 2) if host == "nmt" else (vc_data.BOS_ID, vc_data.EOS_ID)
    step = decoding.model_step(model, decoding.tile_beam(constants, beam_size), **options)
    return decoding.beam_search(
        step,
        state,
        2,
        beam_size,
        max_steps,
        *start_stop,
        min_steps=1,
        probabilities=probabilities,
    )


@pytest.mark.parametrize("mode", registry.CONTEXT_MODES)
@pytest.mark.parametrize("host", hosts.HOSTS)
def test_every_mechanism_trains_and_restores_in_every_host(host, mode, tmp_path):
    build, make_batch, _ = hosts.HOST_SETUPS[host]
    batch = make_batch()
    model = build(registry.make_context_layer(mode, **OPTIONS), seed=5)
    optimizer = keras.optimizers.Adam(0.02)
    model(batch)  # builds the weights
    before = float(_loss(model, batch, training=False)[0])
    for step in range(STEPS[host]):
        with tf.GradientTape() as tape:
            loss, out, logs = _loss(model, batch, step)
        variables = model.trainable_variables
        grads = tape.gradient(loss, variables)
        assert np.isfinite(float(loss)) and any(g is not None for g in grads)
        optimizer.apply_gradients([(g, v) for g, v in zip(grads, variables) if g is not None])
        if step == 0:
            kl = out["kl"].numpy()
            assert kl.shape == tuple(out["attn"].shape[:2]) and np.all(np.isfinite(kl))
            assert (np.abs(kl).max() > 0) == (mode not in WITHOUT_KL), kl
            # the context layer's own statistics reach the host's logs (ACVI's sigma)
            sigma = logs.get("sigma/mean_sigma")
            assert (sigma is not None) == (mode == "acvi"), sorted(logs)
            if sigma is not None:
                log_var = float(logs["sigma/mean_log_variance"])
                assert 0 < float(sigma) and np.isfinite(log_var), (sigma, log_var)
    after = float(_loss(model, batch, training=False)[0])
    assert after < 0.8 * before, (before, after)

    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "model"))
    restored = build(registry.make_context_layer(mode, **OPTIONS), seed=6)
    restored(batch)  # builds the weights, then the checkpoint replaces them
    tf.train.Checkpoint(model=restored).read(path).assert_existing_objects_matched()
    expected, got = model(batch), restored(batch)
    for name in ("logits", "vocab_logits", "attn"):
        if name in expected:
            np.testing.assert_allclose(got[name], expected[name], rtol=1e-6, err_msg=name)

    # decoding (with the mechanism's deterministic decode) gives valid, repeatable
    # results, and the restored model decodes the same
    decoded = _beam(host, model, batch)
    ids, lengths = decoded["ids"].numpy(), decoded["lengths"].numpy()
    vocab = {"summarizer": hosts.PG_V + 1, "nmt": hosts.NMT_TGT_V, "captioner": hosts.VC_VOCAB}
    assert ids.shape == (2, 4) and np.all((ids >= 0) & (ids < vocab[host]))
    assert np.all((lengths >= 1) & (lengths <= 4)) and np.all(np.isfinite(decoded["scores"]))
    for again in (_beam(host, model, batch), _beam(host, restored, batch)):
        np.testing.assert_array_equal(again["ids"], ids)
        np.testing.assert_allclose(again["scores"], decoded["scores"], rtol=1e-5)


@pytest.mark.parametrize("host", hosts.HOSTS)
def test_acvi_trains_and_decodes_in_bfloat16_in_every_host(host):
    """``--mixed_precision=bfloat16``: the products run in bfloat16 on float32 weights, the
    KL, the losses and the beam scores stay float32, and the loss falls as in float32."""
    keras.mixed_precision.set_global_policy("mixed_bfloat16")  # conftest restores float32
    build, make_batch, _ = hosts.HOST_SETUPS[host]
    batch = make_batch()
    model = build(registry.make_context_layer("acvi", **OPTIONS), seed=5)
    optimizer = keras.optimizers.Adam(0.02)
    model(batch)
    assert all(w.dtype == tf.float32 for w in model.weights)
    before = float(_loss(model, batch, training=False)[0])
    for step in range(STEPS[host]):
        with tf.GradientTape() as tape:
            loss, out, _ = _loss(model, batch, step)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(
            [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]
        )
    logits = out["vocab_logits" if host == "summarizer" else "logits"]
    assert logits.dtype == tf.bfloat16
    assert loss.dtype == out["kl"].dtype == tf.float32
    assert float(_loss(model, batch, training=False)[0]) < 0.8 * before
    decoded = _beam(host, model, batch)
    assert decoded["scores"].dtype == tf.float32 and np.all(np.isfinite(decoded["scores"]))

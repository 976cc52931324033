"""Luong NMT: one decoder step against NumPy, the encoder's padding, the loss, the LR, the
initial weights."""

import warnings

import numpy as np
import pytest
import tensorflow as tf
from references import np_lstm

from acvi_tf.compat import keras
from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.formats import nmt_text
from acvi_tf.training import losses
from nmt import data
from nmt import model as model_lib
from nmt import translator as translator_lib

U, S_VOCAB, T_VOCAB = 4, 12, 9


@pytest.fixture
def batch():
    rng = np.random.default_rng(0)
    src_len = np.array([5, 3], np.int32)
    src = np.where(
        np.arange(5)[None] < src_len[:, None], rng.integers(3, S_VOCAB, (2, 5)), 2
    ).astype(np.int32)
    return dict(
        src=src,
        src_len=src_len,
        tgt_in=rng.integers(3, T_VOCAB, (2, 4)).astype(np.int32),
        tgt_out=rng.integers(3, T_VOCAB, (2, 4)).astype(np.int32),
        tgt_len=np.array([4, 2], np.int32),
    )


@pytest.mark.parametrize("attention", model_lib.ATTENTIONS)
def test_decoder_step_matches_numpy(batch, attention):
    keras.utils.set_random_seed(1)
    model = model_lib.NMTModel(S_VOCAB, T_VOCAB, U, attention=attention, dropout=0.0)
    model(batch)
    if attention == "scaled_luong":
        model.scorer.g.assign(1.7)
    constants, state = model.start(batch)
    memory = model.encode(batch["src"], batch["src_len"])[0].numpy()
    y = model.tgt_embedding(batch["tgt_in"][:, 0])
    state["attention"] = tf.constant(np.random.default_rng(2).normal(size=(2, U)), tf.float32)
    output, new_state, attn, context = model.step(y, state, constants)

    x = np.concatenate([y.numpy(), state["attention"].numpy()], -1)  # input feeding
    for cell, (h, c) in zip(model.cells, state["cells"]):
        x, _ = np_lstm(x, h.numpy(), c.numpy(), cell)
    keys = memory @ model.scorer.memory_projection.kernel.numpy()
    scores = np.einsum("bnu,bu->bn", keys, x) * (1.7 if attention == "scaled_luong" else 1.0)
    mask = np.arange(5)[None] < batch["src_len"][:, None]
    scores = np.where(mask, scores, -np.inf)
    a = np.exp(scores - scores.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    ctx = np.einsum("bn,bnd->bd", a, memory)  # the raw encoder outputs are the values
    attention_vector = np.concatenate([x, ctx], -1) @ model.attention_layer.kernel.numpy()
    for ours, ref in [
        (attn, a),
        (context, ctx),
        (output, attention_vector),
        (new_state["attention"], attention_vector),
    ]:
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


def test_bidirectional_encoder_ignores_padding_and_passes_its_states(batch):
    keras.utils.set_random_seed(3)
    model = model_lib.NMTModel(S_VOCAB, T_VOCAB, U, dropout=0.0)
    memory, _, states = model.encode(batch["src"], batch["src_len"])
    assert memory.shape == (2, 5, 2 * U) and len(states) == 2  # one bi layer -> 2 decoder layers
    alone, _, alone_states = model.encode(batch["src"][1:, :3], batch["src_len"][1:])
    np.testing.assert_allclose(memory[1, :3], alone[0], rtol=1e-5, atol=1e-6)
    for padded, single in zip(states, alone_states):
        np.testing.assert_allclose(padded[0][1], single[0][0], rtol=1e-5, atol=1e-6)
    # the backward direction's first output has read the whole (unpadded) sentence
    np.testing.assert_allclose(memory[1, 0, U:], states[1][0][1], rtol=1e-5, atol=1e-6)


def test_tensorflow_nmt_layer_semantics():
    model = model_lib.NMTModel(
        S_VOCAB, T_VOCAB, U, num_encoder_layers=4, num_decoder_layers=4, encoder_type="bi"
    )
    assert len(model.forward_layers) == 2 and model.pass_hidden_state
    uneven = model_lib.NMTModel(S_VOCAB, T_VOCAB, U, num_encoder_layers=2, num_decoder_layers=3)
    assert not uneven.pass_hidden_state  # forced off when the counts differ
    with pytest.raises(ValueError, match="even"):
        model_lib.NMTModel(S_VOCAB, T_VOCAB, U, num_encoder_layers=3, encoder_type="bi")


def test_initial_weights_are_seeded_once_each(batch):
    def weights(**kwargs):
        model = model_lib.NMTModel(S_VOCAB, T_VOCAB, U, init_weight=0.3, **kwargs)
        model(batch)
        return model, model.get_weights()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, first = weights(seed=7)
    assert not [w for w in caught if "unseeded" in str(w.message)]
    for same, again, other in zip(first, weights(seed=7)[1], weights(seed=8)[1]):
        assert np.array_equal(same, again) and not np.array_equal(same, other)
    keras.utils.set_random_seed(4)  # without a seed, the weights follow --seed's
    unseeded = weights()[1]
    keras.utils.set_random_seed(4)
    assert all(np.array_equal(a, b) for a, b in zip(unseeded, weights()[1]))

    layers = [layer.cell for layer in model.forward_layers + model.backward_layers]
    for cell in layers + model.cells:
        gate_i, gate_f, gate_c, gate_o = np.split(cell.bias.numpy(), 4)
        np.testing.assert_array_equal(gate_f, 1.0)
        gates = np.concatenate([gate_i, gate_c, gate_o])
        assert np.all(np.abs(gates) <= 0.3) and np.unique(gates).size == gates.size


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
def test_loss_and_kl_are_token_sums_over_batch_size(batch, dtype):
    """Also for bfloat16 logits (--mixed_precision=bfloat16), whose softmax runs in float32."""
    rng = np.random.default_rng(4)
    logits = tf.cast(4 * rng.normal(size=(2, 4, T_VOCAB)), dtype)
    kl = rng.uniform(size=(2, 4)).astype(np.float32)
    nll, count = losses.sequence_loss(logits, batch["tgt_out"], batch["tgt_len"])
    logits = tf.cast(logits, tf.float64).numpy()
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    xent = -np.take_along_axis(log_p, batch["tgt_out"][..., None], -1)[..., 0]
    mask = np.arange(4)[None] < batch["tgt_len"][:, None]
    np.testing.assert_allclose(nll, (xent * mask).sum() / 2, rtol=1e-5)
    np.testing.assert_allclose(
        losses.per_sequence(kl, batch["tgt_len"]), (kl * mask).sum() / 2, rtol=1e-5
    )
    assert float(count) == 6.0


@pytest.mark.parametrize("context", ["soft", "acvi"])
def test_the_models_own_loss_equals_a_hand_computation(batch, context):
    """``NMTModel.compute_loss`` against NumPy: each sequence's cross-entropy summed over
    its ``tgt_len`` target tokens (``</s>`` included) and averaged over the batch (with
    ACVI, the NLL of its sampled context); without a KL it is the whole loss, with ACVI's
    the loss adds the KL reduced the same way, times its weight."""
    keras.utils.set_random_seed(6)
    layer = acvi_lib.ACVIContext(seed=6) if context == "acvi" else None
    model = model_lib.NMTModel(S_VOCAB, T_VOCAB, U, dropout=0.0, context_layer=layer)
    out = model(batch, training=True)
    logs = model.compute_loss(batch, out, tf.constant(0, tf.int64))
    logits = tf.cast(out["logits"], tf.float64).numpy()
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    xent = -np.take_along_axis(log_p, batch["tgt_out"][..., None], -1)[..., 0]
    mask = np.arange(4)[None] < batch["tgt_len"][:, None]
    nll = (xent * mask).sum() / 2
    np.testing.assert_allclose(logs["nll"], nll, rtol=1e-5)
    if layer is None:
        np.testing.assert_allclose(logs["train_loss"], nll, rtol=1e-5)
    else:  # plus the weighted KL, summed over each sequence's steps and averaged
        kl = (tf.cast(out["kl"], tf.float64).numpy() * mask).sum() / 2
        np.testing.assert_allclose(logs["kl"], kl, rtol=1e-5)
        assert kl > 0.01 and layer.kl_weight == 0.001 and float(layer.regularization()) == 0.0
        added = float(logs["train_loss"]) - float(logs["nll"])
        # to the two float32 roundings of the totals (the term is ~1e-5 of them)
        assert abs(added - layer.kl_weight * kl) <= 2 * np.spacing(np.float32(nll))
    assert float(logs["predict_count"]) == 6.0


def test_acvi_context_trains_with_the_model(batch):
    keras.utils.set_random_seed(5)
    model = model_lib.NMTModel(S_VOCAB, T_VOCAB, U, context_layer=acvi_lib.ACVIContext(seed=5))
    with tf.GradientTape() as tape:
        out = model(batch, training=True)
        loss = losses.sequence_loss(out["logits"], batch["tgt_out"], batch["tgt_len"])[
            0
        ] + losses.per_sequence(out["kl"], batch["tgt_len"])
    grads = tape.gradient(loss, model.trainable_variables)
    names = [
        v.name
        for v, g in zip(model.trainable_variables, grads)
        if g is not None and np.any(tf.convert_to_tensor(g).numpy() != 0)
    ]
    assert sum("variance_network" in n for n in names) == 4
    assert len(names) == len(model.trainable_variables)


def _vocab(folder, name, size):
    (folder / name).write_text(
        "\n".join(list(nmt_text.SPECIALS) + ["%s%d" % (name, i) for i in range(size - 3)])
    )
    return data.Vocab(str(folder / name))


def _built(model, line, src_vocab):
    model(
        next(iter(data.infer_dataset([line], src_vocab, 1)))
        | dict(tgt_in=np.zeros([1, 2], np.int32), tgt_len=np.array([2], np.int32))
    )
    return model


def test_xla_translation_equals_the_plain_one(tmp_path):
    # Under XLA the batches are padded to a multiple of 16 tokens and the search runs in
    # buffers of twice that width; masking and the data-dependent step limit must keep
    # every translation the same.
    src_vocab, tgt_vocab = _vocab(tmp_path, "src", S_VOCAB), _vocab(tmp_path, "tgt", T_VOCAB)
    keras.utils.set_random_seed(2)
    model = model_lib.NMTModel(S_VOCAB, T_VOCAB, U, dropout=0.0, jit_compile=True)
    rng = np.random.default_rng(3)
    lines = [" ".join(rng.choice(src_vocab.words()[3:], size=n)) for n in (3, 7, 18, 5)]
    _built(model, lines[0], src_vocab)
    vocabs = data.Vocabs(src_vocab, tgt_vocab)
    plain = translator_lib.Translator(model, vocabs, "beam_search", 3, 0.5)
    compiled = translator_lib.Translator(model, vocabs, "beam_search", 3, 0.5, jit_compile=True)
    expected = plain.translate(lines, 2)
    assert compiled.translate(lines, 2) == expected
    assert max(len(line.split()) for line in expected) > 16  # the limit is data-dependent


@pytest.mark.parametrize("kl", ["exact", "bound"])
def test_a_translation_inspected_by_teacher_forcing_equals_its_search_record(tmp_path, kl):
    # the report's detail of a listed (beam) translation is one teacher-forced pass of it:
    # for the greedy translation it must equal what the greedy search recorded
    src_vocab, tgt_vocab = _vocab(tmp_path, "src", S_VOCAB), _vocab(tmp_path, "tgt", T_VOCAB)
    keras.utils.set_random_seed(4)
    acvi = acvi_lib.ACVIContext(kl=kl, seed=4)
    model = model_lib.NMTModel(
        S_VOCAB, T_VOCAB, U, dropout=0.0, init_weight=1.0, context_layer=acvi
    )
    line = " ".join(np.random.default_rng(5).choice(src_vocab.words()[3:], size=6))
    translator = translator_lib.Translator(
        _built(model, line, src_vocab), data.Vocabs(src_vocab, tgt_vocab), "greedy", 1, 0.0
    )
    searched = translator.inspect(line)
    assert len(searched["words"]) >= 2
    forced = translator.inspect(line, " ".join(searched["words"]))
    assert forced["words"] == searched["words"]
    for name in ("attn", "sigma", "kl"):
        assert forced[name].shape == searched[name].shape
        np.testing.assert_allclose(forced[name], searched[name], rtol=1e-5, atol=1e-6)
    # another translation gets its own steps: one step per token, attention that differs
    other = translator.inspect(line, " ".join(reversed(searched["words"])))
    assert other["attn"].shape == searched["attn"].shape
    assert np.abs(other["attn"][1:] - searched["attn"][1:]).max() > 1e-3

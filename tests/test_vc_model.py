"""The captioner: one decoder step against NumPy, masking, the attention penalty, batches."""

import json

import numpy as np
import pytest
import tensorflow as tf
from references import np_masked_softmax, np_sigmoid

from acvi_tf.compat import keras
from acvi_tf.contexts import registry
from video_caption import data
from video_caption import decode as decode_lib
from video_caption import model as model_lib


def _small_model(context_layer=None, **settings):
    keras.utils.set_random_seed(3)
    arguments = dict(vocab_size=11, encoder_units=6, decoder_units=5, embedding_dim=4)
    arguments.update(attention_units=3, output_units=7, dropout=0.5)
    arguments.update(settings)
    return model_lib.Captioner(**arguments, context_layer=context_layer)


def _batch(rng, frames=(4, 2), dim=8, captions=((5, 6, 7), (8,))):
    features = [rng.normal(size=[4, dim]).astype(np.float32) for _ in frames]
    for f, n in zip(features, frames):
        f[n:] = 0.0
    return data.make_batch(features, list(frames), [list(c) for c in captions])


def test_decoder_step_matches_numpy():
    rng = np.random.default_rng(0)
    model = _small_model()
    batch = _batch(rng)
    model(batch)
    constants, state = model.start(batch)
    state["context"] = tf.constant(rng.normal(size=[2, 12]).astype(np.float32))
    tokens = tf.constant([5, 9])
    output, new_state, attn = model.step(model.embedding(tokens), state, constants)
    logits = model.logits(output).numpy()

    kernel, recurrent, bias = (v.numpy() for v in model.cell.weights)
    scorer = model.scorer
    memory = constants["prepared"].memory.numpy()
    x = np.concatenate([model.embedding.embeddings.numpy()[[5, 9]], state["context"].numpy()], -1)
    z = x @ kernel + state["h"].numpy() @ recurrent + bias
    i, f, g, o = np.split(z, 4, axis=-1)  # Keras gate order
    c = np_sigmoid(f) * state["c"].numpy() + np_sigmoid(i) * np.tanh(g)
    s = np_sigmoid(o) * np.tanh(c)
    energy = np.tanh(
        memory @ scorer.memory_projection.kernel.numpy()
        + (s @ scorer.query_projection.kernel.numpy() + scorer.query_projection.bias.numpy())[
            :, None
        ]
    )
    scores = (energy @ scorer.energy.kernel.numpy())[..., 0]
    mask = np.arange(4)[None] < np.array([4, 2])[:, None]
    a = np_masked_softmax(scores, mask)
    context = np.einsum("bn,bnd->bd", a, memory)
    v, v_prime = model.output_hidden, model.vocab_projection
    hidden = np.tanh(np.concatenate([s, context], -1) @ v.kernel.numpy() + v.bias.numpy())
    expected = hidden @ v_prime.kernel.numpy() + v_prime.bias.numpy()  # eq. (4) logits

    np.testing.assert_allclose(attn.numpy(), a, atol=1e-5)
    np.testing.assert_allclose(new_state["context"].numpy(), context, atol=1e-5)
    np.testing.assert_allclose(new_state["h"].numpy(), s, atol=1e-5)
    np.testing.assert_allclose(logits, expected, atol=1e-4)


def test_teacher_forcing_equals_stepping_and_ignores_padded_frames():
    rng = np.random.default_rng(1)
    model = _small_model()
    batch = _batch(rng)
    out = model(batch)
    constants, state = model.start(batch)
    for t in range(batch["caption_in"].shape[1]):
        output, state, attn = model.step(
            model.embedding(batch["caption_in"][:, t]), state, constants
        )
        np.testing.assert_allclose(
            model.logits(output).numpy(), out["logits"][:, t].numpy(), atol=1e-5
        )
        assert np.all(attn.numpy()[1, 2:] == 0.0)  # clip 2 has 2 real frames
    noisy = dict(batch)
    garbage = batch["features"].numpy()
    garbage[1, 2:] = 50.0
    noisy["features"] = tf.constant(garbage)
    np.testing.assert_allclose(model(noisy)["logits"].numpy(), out["logits"].numpy(), atol=1e-5)


def test_acvi_context_trains_with_kl_and_decodes_with_the_mean():
    rng = np.random.default_rng(2)
    acvi = registry.make_context_layer("acvi", kl="bound", seed=5)
    model = _small_model(acvi)
    batch = _batch(rng)
    out = model(batch, training=True)
    assert out["kl"].shape == (2, 4)
    assert np.all(out["kl"].numpy() > 0.0)  # the bound is a sum of positive KLs
    # at decode time the context is the mean sum_i a_i h_i: deterministic
    np.testing.assert_allclose(model(batch)["logits"].numpy(), model(batch)["logits"].numpy())


def test_xla_beam_search_gives_the_same_captions(tmp_path):
    keras.utils.set_random_seed(3)
    model = model_lib.Captioner(
        vocab_size=11,
        encoder_units=6,
        decoder_units=5,
        embedding_dim=4,
        attention_units=3,
        output_units=7,
        jit_compile=True,
    )
    batch = _batch(np.random.default_rng(4), frames=(4, 2, 3), captions=((5, 6), (8,), (9,)))
    model(batch)
    (tmp_path / "vocab").write_text("".join("w%d %d\n" % (i, 9 - i) for i in range(7)))
    vocab = data.Vocab(str(tmp_path / "vocab"))
    features, num_frames = batch["features"], batch["num_frames"]
    plain = decode_lib.CaptionDecoder(model, vocab, beam_size=3, max_length=9)
    compiled = decode_lib.CaptionDecoder(model, vocab, beam_size=3, max_length=9, jit_compile=True)
    for (words, attn), (xla_words, xla_attn) in zip(
        plain.caption(features, num_frames), compiled.caption(features, num_frames)
    ):
        assert words == xla_words
        np.testing.assert_allclose(attn, xla_attn, rtol=1e-5, atol=1e-6)


def test_the_models_own_loss_equals_a_hand_computation():
    """``Captioner.compute_loss`` against NumPy: each caption's cross-entropy summed over
    its ``caption_len`` tokens (``</s>`` included) and averaged over the clips, plus
    ``alpha_c`` times the clips' mean of ``sum_i (1 - sum_t a_t,i)^2`` over real steps and
    frames, plus ``weight_decay`` times the kernels' squares."""
    rng = np.random.default_rng(5)
    model = _small_model(dropout=0.0, alpha_c=0.7, weight_decay=0.01)
    batch = _batch(rng, frames=(4, 3), captions=((5, 6, 7, 8), (9, 4)))
    out = model(batch, training=True)
    logs = model.compute_loss(batch, out, tf.constant(0, tf.int64))
    logits = tf.cast(out["logits"], tf.float64).numpy()
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    targets, lengths = np.asarray(batch["caption_out"]), np.asarray(batch["caption_len"])
    xent = -np.take_along_axis(log_p, targets[..., None], -1)[..., 0]
    steps = np.arange(targets.shape[1])[None] < lengths[:, None]
    nll = (xent * steps).sum() / 2
    attn = out["attn"].numpy().astype(np.float64)
    frames = np.arange(attn.shape[2])[None] < np.asarray(batch["num_frames"])[:, None]
    penalty = ((1.0 - (attn * steps[..., None]).sum(1)) ** 2 * frames).sum(-1).mean()
    squares = sum(
        np.square(v.numpy()).sum() for v in model.trainable_variables if "kernel" in v.name
    )
    np.testing.assert_allclose(logs["nll"], nll, rtol=1e-5)
    np.testing.assert_allclose(logs["attention_penalty"], penalty, rtol=1e-5)
    np.testing.assert_allclose(logs["loss"], nll + 0.7 * penalty + 0.01 * squares, rtol=1e-5)
    assert float(logs["tokens"]) == lengths.sum()


def test_attention_penalty_matches_numpy():
    rng = np.random.default_rng(4)
    attn = rng.dirichlet(np.ones(5), size=[3, 6]).astype(np.float32)
    caption_len = np.array([6, 3, 1], np.int32)
    num_frames = np.array([5, 4, 2], np.int32)
    expected = []
    for b in range(3):
        total = attn[b, : caption_len[b], : num_frames[b]].sum(axis=0)
        expected.append(np.sum((1.0 - total) ** 2))
    got = model_lib.attention_penalty(tf.constant(attn), caption_len, num_frames)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5)


def test_vocab_batches_and_feature_padding(tmp_path):
    (tmp_path / "vocab.txt").write_text("a 10\nman 4\nguitar 2\n")
    vocab = data.Vocab(str(tmp_path / "vocab.txt"))
    assert vocab.size() == 7
    assert vocab.encode("a man plays") == [4, 5, data.UNK_ID]
    assert vocab.decode([4, 6, data.EOS_ID, 5]) == ["a", "guitar"]
    batch = data.make_batch([np.ones([2, 3], np.float32)] * 2, [2, 1], [[4, 5], [6]])
    np.testing.assert_array_equal(batch["caption_in"].numpy(), [[2, 4, 5], [2, 6, 0]])
    np.testing.assert_array_equal(batch["caption_out"].numpy(), [[4, 5, 3], [6, 3, 0]])
    np.testing.assert_array_equal(batch["caption_len"].numpy(), [3, 2])
    fixed = data.make_batch([np.ones([2, 3], np.float32)] * 2, [2, 1], [[4, 5], [6]], 4)
    np.testing.assert_array_equal(fixed["caption_out"].numpy(), [[4, 5, 3, 0, 0], [6, 3, 0, 0, 0]])
    np.testing.assert_array_equal(fixed["caption_len"].numpy(), [3, 2])

    record = dict(clip="x_1_2", vid="vid7", captions=["a man"], references=["A man."])
    store = {"vid7": np.arange(40, dtype=np.float32).reshape(10, 4)}
    padded, n = data.clip_features(store, record, 4)
    assert n == 4  # 10 rows sampled down to 4: first of each array_split chunk
    np.testing.assert_array_equal(padded[:, 0], [0, 12, 24, 32])
    padded, n = data.clip_features({"x_1_2": np.ones([2, 4], np.float32)}, record, 4)
    assert n == 2 and np.all(padded[2:] == 0)
    with pytest.raises(data.DataError, match="x_1_2"):
        data.clip_features({}, record, 4, source="feats.h5")


def test_blank_lines_between_records_are_named(tmp_path, caplog):
    path = tmp_path / "val.jsonl"
    line = json.dumps(dict(clip="c_0_1", vid="vid1", captions=["a"], references=["A"]))
    path.write_text(line + "\n\n\n")
    assert len(data.read_split(str(path))) == 1
    assert "blank" not in caplog.text
    path.write_text(line + "\n\n" + line + "\n \n" + line + "\n\n")
    with caplog.at_level("WARNING"):
        assert len(data.read_split(str(path))) == 3
    assert "val.jsonl: skipped 2 blank line(s) between records (first: line 2)" in caplog.text


def test_split_file_errors_name_the_line(tmp_path):
    path = tmp_path / "val.jsonl"
    good = dict(clip="c_0_1", vid="vid1", captions=["a"], references=["A"])
    path.write_text(json.dumps(good) + "\n" + json.dumps(dict(clip="c_1_2")) + "\n")
    with pytest.raises(data.DataError, match=r"val.jsonl:2: .*captions"):
        data.read_split(str(path))
    path.write_text("{not json\n")
    with pytest.raises(data.DataError, match=r"val.jsonl:1: not JSON"):
        data.read_split(str(path))
    path.write_text(json.dumps(dict(good, captions=["a", " "])) + "\n")
    with pytest.raises(
        data.DataError, match=r"val.jsonl:1: clip c_0_1 has an empty caption \(captions 1\)"
    ):
        data.read_split(str(path))

"""Importing See et al.'s TF1 checkpoints: the imported model computes the original's
functions, written here in NumPy from the original's conventions on the raw arrays."""

import os

import numpy as np
import pytest
import tensorflow as tf
from references import np_sigmoid
from see_tf1 import DEC, ENC, LSTM, STEP, E, H, V, original_arrays, write_tf1_checkpoint

from acvi_tf import config as config_lib
from acvi_tf.compat import keras
from acvi_tf.contexts import acvi as acvi_lib
from pointer_generator import experiment, jobs, run_summarization, see_checkpoint, see_import, task
from pointer_generator import model as model_lib
from pointer_generator import vocab as vocab_lib

B, N = 2, 5


# ---- the original model in NumPy ----------------------------------------------------


def _tf1_lstm(x, h, c, weights, biases):
    """TF1 LSTMCell: fused kernel on [x; h], gates i, j, f, o, forget_bias 1.0."""
    i, j, f, o = np.split(np.concatenate([x, h], -1) @ weights + biases, 4, axis=-1)
    c = np_sigmoid(f + 1.0) * c + np_sigmoid(i) * np.tanh(j)
    return np_sigmoid(o) * np.tanh(c), c


def _lstm_weights(w, scope, tf_version):
    weights, biases = LSTM[tf_version]
    return w[scope + "lstm_cell/" + weights], w[scope + "lstm_cell/" + biases]


def _original_encoder(w, tf_version, enc_batch, lens):
    """bidirectional_dynamic_rnn with sequence_length, then the ReLU reduce layer."""
    emb = w["seq2seq/embedding/embedding"][enc_batch]
    outputs = np.zeros((B, N, 2 * H), np.float32)
    finals = {"c": [], "h": []}
    for b in range(B):
        states = []
        for direction, offset, steps in (
            ("fw", 0, range(lens[b])),
            ("bw", H, reversed(range(lens[b]))),
        ):
            h = c = np.zeros(H, np.float32)
            for t in steps:
                h, c = _tf1_lstm(
                    emb[b, t], h, c, *_lstm_weights(w, ENC + direction + "/", tf_version)
                )
                outputs[b, t, offset : offset + H] = h
            states.append((c, h))
        finals["c"].append(np.concatenate([states[0][0], states[1][0]]))
        finals["h"].append(np.concatenate([states[0][1], states[1][1]]))
    reduced = {
        part: np.maximum(
            np.stack(finals[part]) @ w["seq2seq/reduce_final_st/w_reduce_" + part]
            + w["seq2seq/reduce_final_st/bias_reduce_" + part],
            0.0,
        )
        for part in ("c", "h")
    }
    return outputs, reduced["h"], reduced["c"]


def _linear(w, scope, *args):
    return (
        np.concatenate(args, -1) @ w[DEC + scope + "Linear/Matrix"] + w[DEC + scope + "Linear/Bias"]
    )


def _original_step(w, tf_version, y, prev_context, h, c, memory, mask, coverage):
    """One step of See's attention_decoder plus the output projection (training mode)."""
    x = _linear(w, "", y, prev_context)
    h, c = _tf1_lstm(x, h, c, *_lstm_weights(w, DEC, tf_version))
    features = memory @ w[DEC + "W_h"][0, 0] + _linear(w, "Attention/", c, h)[:, None]
    if coverage is not None:
        features = features + coverage[..., None] * w[DEC + "coverage/w_c"][0, 0, 0]
    e = np.sum(w[DEC + "v"] * np.tanh(features), -1)
    a = np.exp(e - e.max(-1, keepdims=True))
    a = a / a.sum(-1, keepdims=True) * mask
    a = a / a.sum(-1, keepdims=True)
    context = np.einsum("bn,bnd->bd", a, memory)
    p_gen = np_sigmoid(_linear(w, "calculate_pgen/", context, c, h, x))[:, 0]
    output = _linear(w, "AttnOutputProjection/", h, context)
    logits = output @ w["seq2seq/output_projection/w"] + w["seq2seq/output_projection/v"]
    return dict(x=x, h=h, c=c, attn=a, context=context, p_gen=p_gen, vocab_logits=logits)


# ---- tests --------------------------------------------------------------------------


def _close(ours, ref):
    np.testing.assert_allclose(np.asarray(ours), ref, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("coverage", [True, False], ids=["coverage", "no_coverage"])
@pytest.mark.parametrize("tf_version", ["1.0", "1.2.1"])
def test_imported_model_computes_the_original(tmp_path, tf_version, coverage, absl_caplog):
    w = original_arrays(tf_version, coverage)
    path = write_tf1_checkpoint(tmp_path / ("model-%d" % STEP), w)
    keras.utils.set_random_seed(3)
    model = see_import.build_see_model(V, H, E)
    w_c_before = model.scorer.coverage_projection.kernel.numpy()
    imported = see_import.import_see_checkpoint(str(tmp_path), model)
    assert imported == see_import.ImportedCheckpoint(path, tf_version, STEP, coverage)
    if not coverage:
        np.testing.assert_array_equal(model.scorer.coverage_projection.kernel, w_c_before)
        assert "coverage/w_c" in absl_caplog.text and "initial values" in absl_caplog.text

    rng = np.random.default_rng(1)
    lens = np.array([N, 3])
    mask = (np.arange(N)[None] < lens[:, None]).astype(np.float32)
    enc_batch = np.where(mask > 0, rng.integers(4, V, size=(B, N)), 1).astype(np.int32)
    memory, (h, c) = model.encode(enc_batch, mask)
    memory_ref, h_ref, c_ref = _original_encoder(w, tf_version, enc_batch, lens)
    _close(memory, memory_ref)  # zeros past each length, as dynamic_rnn
    _close(h, h_ref)
    _close(c, c_ref)

    keys = model.scorer.prepare(memory)
    prepared = model.context_layer.prepare(memory, mask)
    context = tf.zeros([B, 2 * H])
    context_ref = np.zeros((B, 2 * H), np.float32)
    cov = tf.zeros([B, N]) if coverage else None
    cov_ref = None  # the original's first step has no coverage term
    for token in rng.integers(2, V, size=(3, B)):
        y = model.embedding(token)
        context, (h, c), attn, cov, x = model.decoder_step(
            y, context, [h, c], cov, mask, keys, prepared, tf.zeros([B, 0])
        )
        p_gen_logit, vocab_logits = model.project(context, c, h, x)
        ref = _original_step(
            w,
            tf_version,
            w["seq2seq/embedding/embedding"][token],
            context_ref,
            h_ref,
            c_ref,
            memory_ref,
            mask,
            cov_ref,
        )
        for ours, name in (
            (x, "x"),
            (h, "h"),
            (c, "c"),
            (attn, "attn"),
            (context, "context"),
            (vocab_logits, "vocab_logits"),
        ):
            _close(ours, ref[name])
        _close(tf.sigmoid(p_gen_logit), ref["p_gen"])
        context_ref, h_ref, c_ref = ref["context"], ref["h"], ref["c"]
        if coverage:
            cov_ref = ref["attn"] if cov_ref is None else cov_ref + ref["attn"]
            _close(cov, cov_ref)


def test_split_tf1_lstm_reorders_gates_and_folds_the_forget_bias():
    weights = np.arange(5 * 8, dtype=np.float32).reshape(5, 8)  # in 3 + H 2, gates of 2
    kernel, recurrent, bias = see_import.split_tf1_lstm(
        weights, np.arange(8, dtype=np.float32), input_dim=3
    )
    order = [0, 1, 4, 5, 2, 3, 6, 7]  # i, f, j (candidate), o
    np.testing.assert_array_equal(kernel, weights[:3, order])
    np.testing.assert_array_equal(recurrent, weights[3:, order])
    np.testing.assert_array_equal(bias, [0, 1, 5, 6, 2, 3, 6, 7])


def _import_error(tmp_path, arrays, model=None):
    path = write_tf1_checkpoint(tmp_path / "model", arrays)
    with pytest.raises(see_import.SeeCheckpointError) as error:
        see_import.import_see_checkpoint(path, model or see_import.build_see_model(V, H, E))
    return str(error.value)


def test_missing_and_unexpected_variables_are_named(tmp_path):
    arrays = original_arrays("1.2.1", coverage=True)
    del arrays["seq2seq/reduce_final_st/w_reduce_h"]
    arrays[DEC + "Attention/Linear/Extra"] = np.zeros(3, np.float32)
    message = _import_error(tmp_path, arrays)
    assert "missing variables: seq2seq/reduce_final_st/w_reduce_h" in message
    assert "unexpected variables: " + DEC + "Attention/Linear/Extra" in message


def test_wrong_shapes_name_the_variable_and_both_shapes(tmp_path):
    arrays = original_arrays("1.0", coverage=False)
    arrays["seq2seq/embedding/embedding"] = np.zeros((V + 1, E), np.float32)
    arrays[DEC + "W_h"] = np.zeros((2 * H, 2 * H), np.float32)
    message = _import_error(tmp_path, arrays)
    assert "seq2seq/embedding/embedding: checkpoint [21, 4], model needs [20, 4]" in message
    assert DEC + "W_h: checkpoint [6, 6], model needs [1, 1, 6, 6]" in message


def test_a_half_present_optional_group_and_an_unknown_naming_are_errors(tmp_path):
    arrays = original_arrays("1.0", coverage=True)
    del arrays[DEC + "calculate_pgen/Linear/Bias"]
    assert "missing variables: " + DEC + "calculate_pgen/Linear/Bias" in _import_error(
        tmp_path / "a", arrays
    )
    mixed = dict(
        original_arrays("1.0", False),
        **{ENC + "fw/lstm_cell/kernel": np.zeros((E + H, 4 * H), np.float32)},
    )
    assert "found both" in _import_error(tmp_path / "b", mixed)


def test_a_baseline_checkpoint_imports_into_a_baseline_model(tmp_path):
    arrays = {
        name: value
        for name, value in original_arrays("1.2.1", False).items()
        if "calculate_pgen" not in name
    }
    path = write_tf1_checkpoint(tmp_path / "model", arrays)
    baseline = see_import.build_see_model(V, H, E, pointer_gen=False)
    assert see_import.import_see_checkpoint(path, baseline).step == STEP
    message = _import_error(tmp_path / "pg", arrays)
    assert "missing variables: " + DEC + "calculate_pgen/Linear/Bias" in message


def test_the_model_must_be_soft_attention_and_built(tmp_path):
    arrays = original_arrays("1.2.1", coverage=True)
    acvi = model_lib.PointerGenerator(V, H, E, context_layer=acvi_lib.ACVIContext())
    assert "'sa' context" in _import_error(tmp_path / "a", arrays, acvi)
    unbuilt = model_lib.PointerGenerator(V, H, E)
    assert "build the model first" in _import_error(tmp_path / "b", arrays, unbuilt)


def test_cli_writes_a_checkpoint_that_training_resumes_from(tmp_path):
    arrays = original_arrays("1.0", coverage=True)
    tf1_dir = tmp_path / "pretrained_model"
    write_tf1_checkpoint(tf1_dir / ("model-%d" % STEP), arrays)
    vocab_path = tmp_path / "vocab"
    vocab_path.write_text("".join("w%d %d\n" % (i, 100 - i) for i in range(V - 4)))
    train_dir = tmp_path / "logs" / "see" / "train"
    model_flags = ["--vocab_path=%s" % vocab_path, "--vocab_size=%d" % V]
    model_flags += ["--hidden_dim=%d" % H, "--emb_dim=%d" % E]
    command = config_lib.parse(
        see_checkpoint.define_flags,
        ["see_checkpoint", "--tf1_checkpoint=%s" % tf1_dir, "--out_dir=%s" % train_dir]
        + model_flags,
    )
    see_checkpoint.run(command)
    latest = tf.train.latest_checkpoint(str(train_dir))
    assert latest == os.path.join(str(train_dir), "model.ckpt-%d" % STEP)
    written = {p.name: p.read_bytes() for p in train_dir.iterdir()}
    with pytest.raises(see_import.SeeCheckpointError, match="already holds checkpoints"):
        see_checkpoint.run(command)  # a second import would write over the first
    assert {p.name: p.read_bytes() for p in train_dir.iterdir()} == written
    fv = config_lib.parse(
        run_summarization.define_flags, ["run_summarization", "--context=sa"] + model_flags
    )
    vocab = vocab_lib.Vocab(str(vocab_path), V)
    model = experiment.build_model(fv, vocab)
    optimizer = jobs.build_optimizer(fv)
    optimizer.build(model.trainable_variables)
    checkpointer = jobs.build_checkpointer(task.TASK, fv, str(train_dir), model, optimizer, vocab)
    assert checkpointer.restore_latest() == latest
    assert int(checkpointer.step) == STEP
    assert bool(checkpointer.checkpoint.coverage_started)
    np.testing.assert_array_equal(model.embedding.embeddings, arrays["seq2seq/embedding/embedding"])
    np.testing.assert_array_equal(
        model.scorer.coverage_projection.kernel, arrays[DEC + "coverage/w_c"][0, 0]
    )
    _, _, bias = see_import.split_tf1_lstm(
        arrays[DEC + "lstm_cell/weights"], arrays[DEC + "lstm_cell/biases"], E
    )
    np.testing.assert_array_equal(model.cell.bias, bias)

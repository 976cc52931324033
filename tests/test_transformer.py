"""The Transformer baseline: causal decoding, padding, incremental steps, learning."""

import numpy as np
import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.models import transformer
from nmt import translator as translator_lib

V = 12


def _batch(rng, batch=3, src_len=6, tgt_len=5):
    return dict(
        src=rng.integers(3, V, (batch, src_len)).astype(np.int32),
        src_len=np.array([src_len, 4, 2][:batch], np.int32),
        tgt_in=rng.integers(3, V, (batch, tgt_len)).astype(np.int32),
        tgt_out=rng.integers(3, V, (batch, tgt_len)).astype(np.int32),
        tgt_len=np.full([batch], tgt_len, np.int32),
    )


def _model():
    keras.utils.set_random_seed(0)
    return transformer.TransformerModel(
        V, V, num_units=16, num_layers=2, num_heads=4, dropout=0.0, max_len=16
    )


def test_decoder_is_causal_ignores_source_padding_and_scores_the_gold_words():
    model = _model()
    batch = _batch(np.random.default_rng(0))
    out = model(batch)
    logits = out["logits"].numpy().astype(np.float64)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    gold = np.take_along_axis(log_probs, batch["tgt_out"][..., None], -1)[..., 0]
    np.testing.assert_allclose(out["token_nll"], -gold, rtol=1e-5)
    changed = dict(batch, tgt_in=batch["tgt_in"].copy())
    changed["tgt_in"][:, 3:] = 5  # the future must not change earlier positions
    np.testing.assert_allclose(model(changed)["logits"][:, :3], logits[:, :3], rtol=1e-5, atol=1e-6)
    padded = dict(batch, src=batch["src"].copy())
    padded["src"][1, 4:] = 7  # beyond src_len 4
    np.testing.assert_allclose(model(padded)["logits"][1], logits[1], rtol=1e-5, atol=1e-6)
    probs = model(batch)["attn"].numpy()
    assert np.all(probs[2, :, 2:] == 0.0)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5)


def test_incremental_steps_equal_the_teacher_forced_pass():
    model = _model()
    batch = _batch(np.random.default_rng(1))
    logits = model(batch)["logits"].numpy()
    constants, state = model.start(batch)
    for t in range(batch["tgt_in"].shape[1]):
        output, state, _, _ = model.step(
            model.tgt_embedding(batch["tgt_in"][:, t]), state, constants
        )
        np.testing.assert_allclose(
            model.output_projection(output), logits[:, t], rtol=1e-4, atol=1e-5
        )


def test_learns_to_copy_and_decodes_with_the_shared_translator():
    rng = np.random.default_rng(2)
    model = _model()
    optimizer = keras.optimizers.Adam(0.01)

    @tf.function(autograph=False)
    def step(src):
        lengths = tf.fill([tf.shape(src)[0]], tf.shape(src)[1])
        tgt_in = tf.concat([tf.ones_like(src[:, :1]), src], axis=1)
        tgt_out = tf.concat([src, tf.fill(tf.shape(src[:, :1]), 2)], axis=1)
        with tf.GradientTape() as tape:
            logits = model(dict(src=src, src_len=lengths, tgt_in=tgt_in))["logits"]
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(tgt_out, logits))
        optimizer.apply_gradients(
            zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        )
        return loss

    for _ in range(300):
        loss = step(tf.constant(rng.integers(3, V, (32, 5)), tf.int32))
    assert float(loss) < 0.2
    src = rng.integers(3, V, (4, 5)).astype(np.int32)
    out = translator_lib.Translator(model, None, "beam_search", 3, 0.0).search(
        dict(src=tf.constant(src), src_len=tf.fill([4], 5))
    )
    copied = [out["ids"][i, : out["lengths"][i]].numpy().tolist() for i in range(4)]
    assert sum(c == s.tolist() for c, s in zip(copied, src)) >= 3


def test_summarizer_wrapper_has_no_copy_and_matches_teacher_forcing():
    from pointer_generator import losses as pg_losses
    from pointer_generator import transformer as pg_transformer

    keras.utils.set_random_seed(0)
    model = pg_transformer.TransformerSummarizer(10, 8, 1, 2, 0.0, max_len=4)
    batch = dict(
        enc_batch=tf.constant([[4, 5, 6], [7, 8, 1]]),
        enc_padding_mask=tf.constant([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]),
        dec_batch=tf.constant([[2, 4, 5], [2, 6, 1]]),
        target_batch=tf.constant([[4, 5, 3], [6, 3, 1]]),
        dec_padding_mask=tf.constant([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]),
        enc_batch_extend_vocab=tf.constant([[4, 10, 6], [7, 8, 1]]),
    )
    out = model(batch)
    # no copying: the gold summary's NLL is that of the vocabulary softmax
    vocab_nll = tf.nn.sparse_softmax_cross_entropy_with_logits(
        batch["target_batch"], out["vocab_logits"]
    )
    np.testing.assert_allclose(out["token_nll"], vocab_nll, rtol=1e-5)
    losses = pg_losses.compute_losses(out, batch, pointer_gen=False)
    assert np.isfinite(float(losses["total_loss"])) and float(losses["kl"]) == 0.0
    constants, state = model.start(dict(batch, max_art_oovs=2))
    for t in range(3):
        probs, state, extras = model.decode_step(batch["dec_batch"][:, t], state, constants)
        np.testing.assert_allclose(probs.numpy().sum(-1), 1.0, rtol=1e-5)
        assert np.all(probs.numpy()[:, 10:] == 0.0)  # article OOVs cannot be copied
        np.testing.assert_allclose(
            np.log(probs.numpy()[:, :10]),
            tf.nn.log_softmax(out["vocab_logits"][:, t]).numpy(),
            atol=1e-4,
        )
        assert np.all(extras["p_gen"].numpy() == 1.0)

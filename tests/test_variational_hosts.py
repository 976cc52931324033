"""``--context=variational`` in the three hosts: each host's per-step loss against a loop
that evaluates its output layer at every source state by hand (exact marginal at eval,
enumeration ELBO, one REINFORCE sample), and the prior-marginal decoding distribution."""

import numpy as np
import pytest
import tensorflow as tf
from references import np_log_softmax

from acvi_tf.compat import keras
from acvi_tf.contexts import registry
from nmt import model as nmt_model
from pointer_generator import losses as pg_losses
from pointer_generator import model as pg_model
from video_caption import data as vc_data
from video_caption import model as vc_model


def _layer(mode="enum"):
    return registry.make_context_layer("variational", mode=mode, inference_units=3, seed=5)


def _check_terms(out, every, attn, q, mask, valid_steps, mode, training):
    """``out``'s token_nll and kl against ``every`` = log p(y_t | x_i) [B, T, N]."""
    token_nll, kl = out["token_nll"].numpy(), out["kl"].numpy()
    for b, steps in enumerate(valid_steps):
        real = mask[b] > 0
        for t in range(steps):
            a, post, ll = attn[b, t, real], q[b, t, real], every[b, t, real]
            np.testing.assert_allclose(
                kl[b, t], np.sum(post * np.log(post / a)), rtol=1e-4, atol=1e-6
            )
            if not training:
                expected = -np.log(np.sum(a * np.exp(ll)))
            elif mode == "enum":
                expected = -np.sum(post * ll)
            else:  # the sample's value: -log p(y | x_z) at one real position
                assert np.min(np.abs(-ll - token_nll[b, t])) < 1e-4
                continue
            np.testing.assert_allclose(token_nll[b, t], expected, rtol=1e-4)


def _captioner_setup(mode):
    keras.utils.set_random_seed(3)
    model = vc_model.Captioner(
        vocab_size=11,
        encoder_units=6,
        decoder_units=5,
        embedding_dim=4,
        attention_units=3,
        output_units=7,
        dropout=0.0,
        context_layer=_layer(mode),
    )
    rng = np.random.default_rng(0)
    frames = (4, 2)
    features = [rng.normal(size=[4, 8]).astype(np.float32) for _ in frames]
    batch = vc_data.make_batch(features, list(frames), [[5, 6, 7], [8]])
    return model, batch


def _captioner_every(model, batch):
    """log p(gold | h_i) at every frame, stepping the decoder by hand."""
    constants, state = model.start(batch)
    memory = constants["prepared"].memory
    gold = batch["caption_out"].numpy()
    every, attns = [], []
    for t in range(gold.shape[1]):
        output, state, attn = model.step(
            model.embedding(batch["caption_in"][:, t]), state, constants
        )
        s = output[:, : model.decoder_units]
        per_frame = [
            np_log_softmax(model.logits(tf.concat([s, memory[:, i]], -1)).numpy())
            for i in range(memory.shape[1])
        ]
        every.append(np.stack([p[np.arange(len(gold)), gold[:, t]] for p in per_frame], -1))
        attns.append(attn.numpy())
    return np.stack(every, 1), np.stack(attns, 1), constants


@pytest.mark.parametrize("mode,training", [("enum", False), ("enum", True), ("sample", True)])
def test_captioner_terms_match_the_output_layer_at_every_frame(mode, training):
    model, batch = _captioner_setup(mode)
    out = model(batch, training=training)
    every, attn, constants = _captioner_every(model, batch)
    layer = model.context_layer
    gold = batch["caption_out"]
    q = layer.posterior(
        constants["prepared"],
        model.embedding(gold),
        tf.sequence_mask(batch["caption_len"], gold.shape[1]),
    ).numpy()
    _check_terms(
        out,
        every,
        attn,
        q,
        constants["prepared"].mask.numpy(),
        batch["caption_len"].numpy(),
        mode,
        training,
    )


def test_captioner_reinforce_trains_the_inference_network_and_decodes_the_marginal():
    model, batch = _captioner_setup("sample")
    with tf.GradientTape() as tape:
        out = model(batch, training=True)
        loss = tf.reduce_sum(out["token_nll"] + out["kl"])
    grads = tape.gradient(loss, model.context_layer.trainable_variables)
    assert grads and all(g is not None and np.any(g.numpy() != 0) for g in grads)
    constants, state = model.start(batch)
    output, _, attn = model.step(model.embedding(tf.constant([2, 2])), state, constants)
    got = np.exp(model.log_probs(output, attn, constants["prepared"]).numpy())
    memory = constants["prepared"].memory
    s = output[:, : model.decoder_units]
    expected = sum(
        attn.numpy()[:, i : i + 1]
        * tf.nn.softmax(model.logits(tf.concat([s, memory[:, i]], -1))).numpy()
        for i in range(memory.shape[1])
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    np.testing.assert_allclose(got.sum(-1), 1.0, rtol=1e-5)


def test_nmt_exact_marginal_and_decoding_distribution():
    keras.utils.set_random_seed(1)
    model = nmt_model.NMTModel(12, 9, 4, dropout=0.0, context_layer=_layer())
    rng = np.random.default_rng(0)
    src_len = np.array([5, 3], np.int32)
    src = np.where(np.arange(5)[None] < src_len[:, None], rng.integers(3, 12, (2, 5)), 2).astype(
        np.int32
    )
    batch = dict(
        src=src,
        src_len=src_len,
        tgt_in=rng.integers(3, 9, (2, 4)).astype(np.int32),
        tgt_out=rng.integers(3, 9, (2, 4)).astype(np.int32),
        tgt_len=np.array([4, 2], np.int32),
    )
    out = model(batch)
    constants, state = model.start(dict(src=src, src_len=src_len))
    memory = constants["prepared"].memory
    every, attns = [], []
    for t in range(4):
        output, state, attn, context = model.step(
            model.tgt_embedding(batch["tgt_in"][:, t]), state, constants
        )
        top = state["cells"][-1][0]
        per_position = np.stack(
            [np_log_softmax(model.vocab_logits(top, memory[:, i]).numpy()) for i in range(5)], 1
        )  # [B, N, V]
        every.append(per_position[np.arange(2), :, batch["tgt_out"][:, t]])
        attns.append(attn.numpy())
        decoded = np.exp(model.log_probs(output, state, attn, context, constants).numpy())
        np.testing.assert_allclose(
            decoded, np.einsum("bn,bnv->bv", attn.numpy(), np.exp(per_position)), rtol=1e-5
        )
    q = model.context_layer.posterior(
        constants["prepared"],
        model.tgt_embedding(batch["tgt_out"]),
        tf.sequence_mask(batch["tgt_len"], 4),
    ).numpy()
    _check_terms(
        out,
        np.stack(every, 1),
        np.stack(attns, 1),
        q,
        constants["prepared"].mask.numpy(),
        batch["tgt_len"],
        "enum",
        False,
    )


def test_pointer_generator_keeps_the_copy_distribution_and_mixes_p_vocab():
    vocab, steps = 20, 3
    rng = np.random.default_rng(0)
    mask = np.array([[1, 1, 1, 1], [1, 1, 1, 0]], np.float32)
    enc = np.where(mask > 0, rng.integers(4, vocab, size=(2, 4)), 1).astype(np.int32)
    ext = enc.copy()
    ext[0, 2] = vocab  # an article OOV the gold summary copies
    enc[0, 2] = 0
    target = rng.integers(4, vocab, size=(2, steps)).astype(np.int32)
    target[0, 1] = vocab
    batch = dict(
        enc_batch=enc,
        enc_padding_mask=mask,
        enc_batch_extend_vocab=ext,
        dec_batch=rng.integers(2, vocab, size=(2, steps)).astype(np.int32),
        target_batch=target,
        dec_padding_mask=np.array([[1, 1, 1], [1, 1, 0]], np.float32),
    )
    keras.utils.set_random_seed(1)
    model = pg_model.PointerGenerator(
        vocab, hidden_dim=5, emb_dim=4, context_layer=_layer(), trunc_norm_init_std=0.5
    )
    out = model(batch, training=True)
    memory = out["prepared"].memory
    every = np.stack(
        [
            pg_losses.gold_log_probs(
                model.vocab_at(out["h"], tf.repeat(memory[:, i : i + 1], steps, axis=1)),
                out["attn"],
                out["p_gen_logit"],
                ext,
                target,
            ).numpy()
            for i in range(4)
        ],
        -1,
    )
    q = model.context_layer.posterior(
        out["prepared"],
        model.embedding(tf.where(target >= vocab, 0, target)),
        batch["dec_padding_mask"],
    ).numpy()
    _check_terms(out, every, out["attn"].numpy(), q, mask, [3, 2], "enum", True)
    losses = pg_losses.compute_losses(out, batch)
    assert np.isfinite(float(losses["total_loss"]))
    constants, state = model.start(dict(batch, max_art_oovs=1))
    final, _, extras = model.decode_step(tf.constant([2, 2]), state, constants)
    np.testing.assert_allclose(final.numpy().sum(-1), 1.0, rtol=1e-5)
    copied = (1.0 - extras["p_gen"].numpy()[0]) * extras["attn"].numpy()[0, 2]
    assert final.numpy()[0, vocab] == pytest.approx(copied, rel=1e-5)  # the OOV: copy only

"""Pointer-generator model and losses against NumPy with the same weights."""

import numpy as np
import pytest
import tensorflow as tf
from references import np_lstm, np_sigmoid

from acvi_tf.compat import keras
from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts import registry
from pointer_generator import losses as losses_lib
from pointer_generator import model as model_lib

V, H, E = 12, 3, 4
B, N, T = 2, 5, 4


@pytest.fixture
def batch():
    rng = np.random.default_rng(0)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.float32)
    enc = np.where(mask > 0, rng.integers(4, V, size=(B, N)), 1).astype(np.int32)
    ext = enc.copy()
    ext[0, 1] = ext[0, 3] = V  # one article OOV, twice
    ext[1, 0] = V
    enc[0, 1] = enc[0, 3] = enc[1, 0] = 0
    dec = rng.integers(2, V, size=(B, T)).astype(np.int32)
    target = rng.integers(4, V, size=(B, T)).astype(np.int32)
    target[0, 2] = V  # gold word copied from the article
    dec_mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], np.float32)
    return dict(
        enc_batch=enc,
        enc_padding_mask=mask,
        enc_batch_extend_vocab=ext,
        dec_batch=dec,
        target_batch=target,
        dec_padding_mask=dec_mask,
    )


@pytest.fixture
def model(batch):
    keras.utils.set_random_seed(1)
    m = model_lib.PointerGenerator(V, hidden_dim=H, emb_dim=E)
    m(batch, coverage_on=True)
    return m


def test_one_decoder_step_matches_numpy(model, batch):
    rng = np.random.default_rng(2)
    memory = rng.normal(size=(B, N, 2 * H)).astype(np.float32)
    y = rng.normal(size=(B, E)).astype(np.float32)
    prev_ctx = rng.normal(size=(B, 2 * H)).astype(np.float32)
    h0, c0 = (tf.constant(rng.normal(size=(B, H)), tf.float32) for _ in range(2))
    coverage = rng.uniform(size=(B, N)).astype(np.float32) * batch["enc_padding_mask"]
    mask = batch["enc_padding_mask"]
    keys = model.scorer.prepare(memory)
    prepared = model.context_layer.prepare(memory, mask)
    ctx, (h1, c1), attn, new_cov, x = model.decoder_step(
        y, prev_ctx, [h0, c0], coverage, mask, keys, prepared, tf.zeros([B, 0])
    )

    wx, bx = (w.numpy() for w in model.input_projection.weights)
    x_ref = np.concatenate([y, prev_ctx], -1) @ wx + bx
    h_ref, c_ref = np_lstm(x_ref, h0.numpy(), c0.numpy(), model.cell)
    scorer = model.scorer
    features = (
        memory @ scorer.memory_projection.kernel.numpy()
        + (
            np.concatenate([c_ref, h_ref], -1) @ scorer.query_projection.kernel.numpy()
            + scorer.query_projection.bias.numpy()
        )[:, None]
        + coverage[..., None] * scorer.coverage_projection.kernel.numpy()[0]
    )
    e = np.tanh(features) @ scorer.energy.kernel.numpy()[:, 0]
    a = np.exp(e - e.max(-1, keepdims=True))
    a = a / a.sum(-1, keepdims=True) * mask  # See: softmax, mask, renormalise
    a = a / a.sum(-1, keepdims=True)
    for ours, ref in [
        (x, x_ref),
        (h1, h_ref),
        (c1, c_ref),
        (attn, a),
        (ctx, np.einsum("bn,bnd->bd", a, memory)),
        (new_cov, coverage + a),
    ]:
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


def test_outputs_after_the_loop_match_numpy(model, batch):
    out = model(batch, coverage_on=True)
    w, b = (v.numpy() for v in model.p_gen_layer.weights)
    features = np.concatenate([out[k].numpy() for k in ("context", "c", "h", "x")], -1)
    np.testing.assert_allclose(out["p_gen_logit"], (features @ w + b)[..., 0], rtol=1e-5, atol=1e-6)
    attn = out["attn"].numpy()
    coverage = np.cumsum(attn, axis=1) - attn  # coverage before each step
    np.testing.assert_allclose(
        out["coverage_terms"], np.minimum(attn, coverage).sum(-1), rtol=1e-5, atol=1e-7
    )
    assert np.all(out["coverage_terms"].numpy()[:, 0] == 0.0)
    assert out["vocab_logits"].shape == (B, T, V)


def test_final_distribution_sums_to_one_and_accumulates_repeated_words(model, batch):
    out = model(batch, coverage_on=True)
    vocab_dists = tf.nn.softmax(out["vocab_logits"]).numpy()
    p_gen = np_sigmoid(out["p_gen_logit"].numpy())
    attn = out["attn"].numpy()
    final = losses_lib.final_distribution(
        vocab_dists, attn, p_gen, batch["enc_batch_extend_vocab"], 1
    ).numpy()
    assert final.shape == (B, T, V + 1)
    np.testing.assert_allclose(final.sum(-1), 1.0, rtol=1e-5)
    # the OOV at positions 1 and 3 of example 0 gets both attention weights
    np.testing.assert_allclose(
        final[0, :, V], (1 - p_gen[0]) * (attn[0, :, 1] + attn[0, :, 3]), rtol=1e-5
    )
    word = batch["enc_batch_extend_vocab"][1, 1]
    copied = attn[1, :, batch["enc_batch_extend_vocab"][1] == word].sum(0)
    np.testing.assert_allclose(
        final[1, :, word], p_gen[1] * vocab_dists[1, :, word] + (1 - p_gen[1]) * copied, rtol=1e-5
    )
    gold = losses_lib.gold_log_probs(
        out["vocab_logits"],
        out["attn"],
        out["p_gen_logit"],
        batch["enc_batch_extend_vocab"],
        batch["target_batch"],
    )
    expected = np.log(np.take_along_axis(final, batch["target_batch"][..., None], -1)[..., 0])
    np.testing.assert_allclose(gold, expected, rtol=1e-5, atol=1e-6)


def test_log_space_loss_is_finite_where_the_original_takes_log_zero(batch):
    logits = np.zeros((B, T, V), np.float32)
    attn = np.zeros((B, T, N), np.float32)
    attn[..., 0] = 1.0  # all attention on a position that is not the gold OOV
    p_gen_logit = tf.Variable(np.full((B, T), 60.0, np.float32))  # p_gen == 1 in float32
    target = batch["target_batch"].copy()
    target[0, 0] = V  # gold: an article OOV with no copy mass and P_vocab = 0
    with tf.GradientTape() as tape:
        gold = losses_lib.gold_log_probs(
            logits, attn, p_gen_logit, batch["enc_batch_extend_vocab"], target
        )
        loss = -tf.reduce_sum(gold)
    assert np.all(np.isfinite(gold)) and np.all(np.isfinite(tape.gradient(loss, p_gen_logit)))


def test_losses_match_a_hand_computation(batch):
    rng = np.random.default_rng(3)
    out = {
        "vocab_logits": rng.normal(size=(B, T, V)).astype(np.float32),
        "attn": np.full((B, T, N), 0.2, np.float32),
        "p_gen_logit": rng.normal(size=(B, T)).astype(np.float32),
        "coverage_terms": rng.uniform(size=(B, T)).astype(np.float32),
        "kl": rng.uniform(size=(B, T)).astype(np.float32),
    }
    out["token_nll"] = -losses_lib.gold_log_likelihood(out, batch)
    mask = batch["dec_padding_mask"]
    logits, target = out["vocab_logits"].astype(np.float64), batch["target_batch"]
    p_vocab = np.exp(logits - logits.max(-1, keepdims=True))
    p_vocab /= p_vocab.sum(-1, keepdims=True)
    p_gen = np_sigmoid(out["p_gen_logit"].astype(np.float64))
    ext = batch["enc_batch_extend_vocab"]
    nll = np.zeros((B, T))
    for b in range(B):
        for t in range(T):
            w = target[b, t]
            prob = (p_gen[b, t] * p_vocab[b, t, w] if w < V else 0.0) + (
                1 - p_gen[b, t]
            ) * 0.2 * np.sum(ext[b] == w)
            nll[b, t] = -np.log(prob)

    def see_avg(values):  # per example over its steps, then the batch mean
        return np.mean((values * mask).sum(1) / mask.sum(1))

    losses = losses_lib.compute_losses(
        out,
        batch,
        coverage_on=True,
        cov_loss_wt=0.5,
        context_layer=acvi_lib.ACVIContext(kl_weight=2.0),
    )
    np.testing.assert_allclose(losses["loss"], see_avg(nll), rtol=1e-5)
    np.testing.assert_allclose(losses["coverage_loss"], see_avg(out["coverage_terms"]), rtol=1e-5)
    np.testing.assert_allclose(losses["kl"], see_avg(out["kl"]), rtol=1e-5)
    np.testing.assert_allclose(
        losses["total_loss"],
        see_avg(nll) + 0.5 * see_avg(out["coverage_terms"]) + 2.0 * see_avg(out["kl"]),
        rtol=1e-5,
    )
    # baseline: sequence_loss's token mean of the plain softmax cross-entropy
    in_vocab = dict(batch, target_batch=np.minimum(target, V - 1))
    softmax_nll = -losses_lib.gold_log_likelihood(out, in_vocab, pointer_gen=False)
    baseline = losses_lib.compute_losses(
        dict(out, token_nll=softmax_nll), in_vocab, pointer_gen=False
    )
    ce = -np.log(np.take_along_axis(p_vocab, in_vocab["target_batch"][..., None], -1)[..., 0])
    np.testing.assert_allclose(baseline["loss"], (ce * mask).sum() / mask.sum(), rtol=1e-5)
    assert float(baseline["coverage_loss"]) == 0.0


def test_monte_carlo_samples_average_per_example_before_the_batch_mean(batch):
    out = {
        "vocab_logits": np.zeros((2 * B, T, V), np.float32),
        "attn": np.full((2 * B, T, N), 0.2, np.float32),
        "p_gen_logit": np.zeros((2 * B, T), np.float32),
        "coverage_terms": np.zeros((2 * B, T), np.float32),
        "kl": np.repeat(np.array([[1.0], [3.0], [5.0], [7.0]], np.float32), T, 1),
        "token_nll": np.zeros((2 * B, T), np.float32),
    }
    tiled = {k: np.repeat(v, 2, axis=0) for k, v in batch.items()}
    losses = losses_lib.compute_losses(out, tiled, num_samples=2)
    np.testing.assert_allclose(losses["kl"], np.mean([2.0, 6.0]), rtol=1e-6)


def test_acvi_model_trains_the_variance_network(batch):
    keras.utils.set_random_seed(4)
    layer = acvi_lib.ACVIContext(seed=4)
    m = model_lib.PointerGenerator(V, hidden_dim=H, emb_dim=E, context_layer=layer)
    with tf.GradientTape() as tape:
        out = m(batch, training=True)
        loss = losses_lib.compute_losses(out, batch)["total_loss"]
    grads = dict(
        zip([v.name for v in m.trainable_variables], tape.gradient(loss, m.trainable_variables))
    )
    variance_grads = [g for n, g in grads.items() if "variance_network" in n]
    assert len(variance_grads) == 4
    assert all(np.any(tf.convert_to_tensor(g).numpy() != 0) for g in variance_grads)


def test_structured_attention_is_the_copy_distribution_and_learns_its_chain(batch):
    keras.utils.set_random_seed(5)
    layer = registry.make_context_layer("structured")
    m = model_lib.PointerGenerator(V, hidden_dim=H, emb_dim=E, context_layer=layer)
    with tf.GradientTape() as tape:
        out = m(batch, training=True, coverage_on=True)
        loss = losses_lib.compute_losses(out, batch, coverage_on=True)["total_loss"]
    attn = out["attn"].numpy()
    np.testing.assert_allclose(attn.sum(-1), 1.0, rtol=1e-5)  # a copy distribution
    assert np.all(attn[1, :, 3:] == 0.0)
    grad = tape.gradient(loss, layer.transitions)
    assert np.all(np.isfinite(grad.numpy())) and np.abs(grad.numpy()).sum() > 0.0

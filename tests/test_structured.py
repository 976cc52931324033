"""Structured attention: CRF marginals against brute-force enumeration, the independent
case, masking, gradients, and the context layer in the three hosts."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.contexts import registry, structured


def _brute_force(unary, transitions, length):
    """p(z_i = 1) by enumerating all 2^L assignments of the real positions."""
    start, end = transitions.mean(axis=0), transitions.mean(axis=1)
    weights = np.zeros(length)
    total = 0.0
    for z in itertools.product([0, 1], repeat=length):
        score = start[z[0]] + end[z[-1]] + sum(unary[i] * z[i] for i in range(length))
        score += sum(transitions[z[i - 1], z[i]] for i in range(1, length))
        p = np.exp(score)
        total += p
        weights += p * np.array(z)
    return weights / total


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_marginals_match_enumeration(n):
    rng = np.random.default_rng(n)
    unary = rng.normal(scale=2.0, size=[3, 2, n])
    transitions = rng.normal(size=[2, 2])
    lengths = np.array([n, max(1, n - 1), max(1, n // 2)])
    mask = (np.arange(n)[None] < lengths[:, None]).astype(np.float32)
    mask = np.repeat(mask[:, None], 2, axis=1)  # [B, T, N]
    got = structured.crf_marginals(
        tf.constant(unary, tf.float32), tf.constant(transitions, tf.float32), mask
    ).numpy()
    for b in range(3):
        for t in range(2):
            expected = _brute_force(unary[b, t], transitions, lengths[b])
            np.testing.assert_allclose(got[b, t, : lengths[b]], expected, rtol=1e-4, atol=1e-6)
            assert np.all(got[b, t, lengths[b] :] == 0.0)


def test_zero_transitions_give_independent_sigmoids():
    unary = np.linspace(-3, 3, 7).astype(np.float32)[None]
    got = structured.crf_marginals(unary, tf.zeros([2, 2]), np.ones_like(unary)).numpy()
    np.testing.assert_allclose(got, 1.0 / (1.0 + np.exp(-unary)), rtol=1e-5)


def test_context_layer_normalises_scales_and_learns_transitions():
    rng = np.random.default_rng(0)
    layer = registry.make_context_layer("structured", scale=2.0)
    memory = tf.constant(rng.normal(size=[2, 5, 3]), tf.float32)
    mask = tf.constant([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], tf.float32)
    prepared = layer.prepare(memory, mask)
    scores = tf.constant(rng.normal(size=[2, 5]), tf.float32)
    with tf.GradientTape() as tape:
        layer.transitions.assign([[0.5, -0.3], [0.2, 0.1]])
        weights = layer.normalizer(scores, mask)
        context, kl = layer(weights, prepared)
        loss = tf.reduce_sum(context * context)
    np.testing.assert_allclose(weights.numpy().sum(-1), [1.0, 1.0], rtol=1e-5)
    assert np.all(weights.numpy()[1, 3:] == 0.0)
    np.testing.assert_allclose(
        context.numpy(), 2.0 * np.einsum("bn,bnd->bd", weights, memory), rtol=1e-5
    )
    assert np.all(kl.numpy() == 0.0)
    grad = tape.gradient(loss, layer.transitions)
    assert grad is not None and np.all(np.isfinite(grad.numpy()))
    assert np.abs(grad.numpy()).sum() > 0.0


def test_hosts_run_with_structured_attention():
    from nmt import model as nmt_model
    from video_caption import data as vc_data
    from video_caption import model as vc_model

    keras.utils.set_random_seed(0)
    captioner = vc_model.Captioner(
        9, 4, 5, 3, 3, context_layer=registry.make_context_layer("structured")
    )
    batch = vc_data.make_batch([np.ones([3, 4], np.float32)] * 2, [3, 2], [[4, 5], [6]])
    out = captioner(batch)
    np.testing.assert_allclose(out["attn"].numpy()[0].sum(-1), 1.0, rtol=1e-5)
    assert np.all(out["attn"].numpy()[1, :, 2:] == 0.0)
    translator = nmt_model.NMTModel(
        7, 8, 4, 2, 1, "bi", context_layer=registry.make_context_layer("structured")
    )
    nmt_batch = dict(
        src=tf.constant([[3, 4, 5], [4, 5, 0]]),
        src_len=tf.constant([3, 2]),
        tgt_in=tf.constant([[1, 4], [1, 5]]),
        tgt_out=tf.constant([[4, 2], [5, 2]]),
        tgt_len=tf.constant([2, 2]),
    )
    attn = translator(nmt_batch)["attn"].numpy()
    np.testing.assert_allclose(attn.sum(-1), 1.0, rtol=1e-5)
    assert np.all(attn[1, :, 2] == 0.0)


def test_regularization_is_the_l2_penalty_on_the_transitions():
    layer = registry.make_context_layer("structured", penalty=0.005)
    layer.prepare(tf.zeros([1, 2, 3]))
    layer.transitions.assign([[1.0, -2.0], [0.5, 0.0]])
    assert float(layer.regularization()) == pytest.approx(0.005 * 5.25)
    assert float(registry.make_context_layer("sa").regularization()) == 0.0

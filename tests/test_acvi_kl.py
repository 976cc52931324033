"""ACVI's KL terms at the paper's size and against the sampler they go with.

``exact`` must be the KL of the distribution eq. 25 draws from; ``mc``'s mixture density
must hold against a float64 NumPy reference at N = 400, D = 512, at initialisation and
at the clip of log sigma^2, where the expanded quadratic form cancels catastrophically.
"""

import numpy as np
import pytest
import tensorflow as tf
from references import np_log_normal, np_masked_softmax

from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts.memory import PreparedMemory


def _layer_with_log_var(kl, memory, log_var, **kwargs):
    """An ACVI layer whose variance network outputs ``log_var`` [B, N, D] exactly."""
    layer = acvi_lib.ACVIContext(kl=kl, **kwargs)
    layer.prepare(memory)
    layer.variance_network.call = lambda _: tf.constant(log_var, tf.float32)
    return layer


def _np_log_posterior(c, probs, memory, var):
    """float64 ``log sum_i a_i N(c | h_i, var_i)`` by the direct form, [B, T]."""
    out = np.empty(c.shape[:2])
    for b in range(c.shape[0]):
        for t in range(c.shape[1]):
            comps = np.log(probs[b, t]) + np_log_normal(c[b, t][None], memory[b], var[b])
            out[b, t] = np.logaddexp.reduce(comps)
    return out


def _np_sampler_kl(probs, memory, var):
    mean = probs @ memory
    s2 = (probs**2) @ var
    return 0.5 * np.sum(s2 + mean**2 - 1 - np.log(s2), axis=-1)


def test_exact_kl_is_the_average_log_ratio_of_eq25_samples():
    """Draws from the layer's own eq. 25 sampler (one eps per component) average
    ``log q'(c) - log p(c)`` to ``exact``, with q' the Gaussian of that sampler."""
    rng = np.random.default_rng(0)
    memory = rng.normal(size=(1, 4, 3)).astype(np.float32)
    log_var = rng.uniform(-2, 1.5, size=(1, 4, 3)).astype(np.float32)
    probs = np_masked_softmax(rng.normal(size=(1, 2, 4)), np.ones((1, 4), bool))
    num = 50000
    layer = _layer_with_log_var(
        "exact", memory, np.repeat(log_var, num, 0), noise="per_component", seed=3
    )
    prepared = layer.prepare(np.repeat(memory, num, 0))
    tiled = np.repeat(probs, num, 0).astype(np.float32)
    samples, kl = layer(tiled, prepared, training=True)
    var = np.exp(log_var.astype(np.float64))
    mean, s2 = probs @ memory, (probs**2) @ var
    log_ratio = np_log_normal(samples.numpy(), mean, s2) - np_log_normal(
        samples.numpy(), np.zeros(3), np.ones(3)
    )
    spread = log_ratio.std(axis=0) / np.sqrt(num)
    assert np.all(np.abs(log_ratio.mean(axis=0) - kl.numpy()[0]) < 4.5 * spread + 1e-3)
    np.testing.assert_allclose(kl.numpy()[0], _np_sampler_kl(probs, memory, var)[0], rtol=1e-5)


@pytest.mark.parametrize("log_var_range", [(-10.0, -9.0), (-3.0, 3.0), (9.0, 10.0)])
def test_exact_kl_is_never_negative(log_var_range):
    rng = np.random.default_rng(1)
    memory = (rng.normal(size=(64, 9, 6)) * rng.uniform(0, 2, size=(64, 1, 1))).astype(np.float32)
    log_var = rng.uniform(*log_var_range, size=memory.shape).astype(np.float32)
    probs = np_masked_softmax(
        rng.normal(size=(64, 5, 9)) * rng.uniform(0, 20, (64, 1, 1)), np.ones(9, bool)
    ).astype(np.float32)
    layer = _layer_with_log_var("exact", memory, log_var)
    kl = layer.kl_divergence(np.zeros((64, 5, 6), np.float32), probs, layer.prepare(memory)).numpy()
    assert kl.min() >= -1e-5 * 6, kl.min()


def test_exact_kl_gradients_match_finite_differences():
    rng = np.random.default_rng(2)
    memory = tf.constant(rng.normal(size=(2, 5, 3)))
    log_var = tf.constant(rng.uniform(-2, 2, size=(2, 5, 3)))
    logits = tf.constant(rng.normal(size=(2, 4, 5)))
    mask = tf.ones([2, 5], tf.float64)

    def kl(memory, log_var, logits):
        own = acvi_lib.ACVIMemory(variance=tf.exp(log_var))
        prepared = PreparedMemory(memory=memory, mask=mask, own=own)
        return tf.reduce_sum(acvi_lib.sampler_kl(tf.nn.softmax(logits), prepared))

    theoretical, numerical = tf.test.compute_gradient(kl, [memory, log_var, logits])
    for ours, finite in zip(theoretical, numerical):
        np.testing.assert_allclose(ours, finite, rtol=1e-5, atol=1e-7)


def _paper_size(log_var_low, log_var_high, seed, sharpness=1.0):
    """N = 400, D = 512 encoder states, attention of logits N(0, sharpness^2)."""
    rng = np.random.default_rng(seed)
    memory = (0.5 * rng.normal(size=(2, 400, 512))).astype(np.float32)
    log_var = rng.uniform(log_var_low, log_var_high, size=memory.shape).astype(np.float32)
    probs = np_masked_softmax(sharpness * rng.normal(size=(2, 3, 400)), np.ones(400, bool)).astype(
        np.float32
    )
    return memory, log_var, probs


@pytest.mark.parametrize(
    "log_var_low,log_var_high,sharpness",
    [(-1.0, 1.0, 1.0), (-10.0, -9.5, 1.0), (-10.0, -9.5, 8.0)],
    ids=["initialisation", "clip_spread", "clip_peaked"],
)
def test_mc_density_and_kl_match_float64_numpy_at_the_papers_size(
    log_var_low, log_var_high, sharpness
):
    """Peaked attention puts the sample near one h_i, where the expanded form's terms
    of about 1e6 nats cancel to a few hundred."""
    memory, log_var, probs = _paper_size(log_var_low, log_var_high, 3, sharpness)
    layer = _layer_with_log_var("mc", memory, log_var, seed=4)
    prepared = layer.prepare(memory)
    samples = layer.draw(probs, prepared, training=True).numpy()
    var = np.exp(log_var.astype(np.float64))
    reference = _np_log_posterior(
        samples.astype(np.float64), probs.astype(np.float64), memory.astype(np.float64), var
    )
    # near the clip log q is about -1e6 nats: float32 itself resolves 0.06 of them
    np.testing.assert_allclose(
        layer.log_posterior(samples, probs, prepared).numpy(), reference, rtol=2e-7, atol=1e-3
    )
    log_prior = np_log_normal(samples.astype(np.float64), np.zeros(512), np.ones(512))
    np.testing.assert_allclose(
        layer.kl_divergence(samples, probs, prepared).numpy(),
        reference - log_prior,
        rtol=2e-7,
        atol=1e-3,
    )


def test_exact_kl_matches_float64_numpy_at_the_papers_size():
    memory, log_var, probs = _paper_size(-10.0, 10.0, seed=5)
    layer = _layer_with_log_var("exact", memory, log_var)
    kl = layer.kl_divergence(np.zeros((2, 3, 512), np.float32), probs, layer.prepare(memory))
    reference = _np_sampler_kl(
        probs.astype(np.float64), memory.astype(np.float64), np.exp(log_var.astype(np.float64))
    )
    np.testing.assert_allclose(kl.numpy(), reference, rtol=1e-5)

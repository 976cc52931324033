"""ACVI and SA context layers: exact math against NumPy, and the properties ACVI.md lists."""

import numpy as np
import pytest
import tensorflow as tf
from references import np_log_normal, np_masked_softmax

from acvi_tf.compat import keras
from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts import attention, context

B, N, D = 2, 5, 3
LENGTHS = [5, 3]


def _mask(lengths=LENGTHS, n=N):
    return np.arange(n)[None, :] < np.array(lengths)[:, None]


@pytest.fixture
def batch():
    rng = np.random.default_rng(0)
    memory = rng.normal(size=(B, N, D)).astype(np.float32)
    mask = _mask()
    probs = np_masked_softmax(rng.normal(size=(B, N)), mask).astype(np.float32)
    return memory, mask, probs


def _set_variance_net(layer, memory, w1, b1, w2=None, b2=None):
    """Builds the variance network on `memory` and gives it the weights wanted."""
    layer.prepare(memory)
    net = layer.variance_network
    net.W1.assign(w1)
    net.b1.assign(b1)
    if w2 is not None:
        net.W2.assign(w2)
        net.b2.assign(b2)


def _constant_log_var(layer, memory, value):
    dim = memory.shape[-1]
    zeros = np.zeros((dim, dim), np.float32)
    _set_variance_net(
        layer, memory, zeros, np.zeros(dim, np.float32), zeros, np.full(dim, value, np.float32)
    )


def test_sa_context_is_expected_encoder_state(batch):
    memory, mask, probs = batch
    layer = context.SoftAttentionContext()
    ctx, kl = layer(probs, layer.prepare(memory, mask))
    np.testing.assert_allclose(ctx, np.einsum("bn,bnd->bd", probs, memory), rtol=1e-6)
    assert np.all(kl.numpy() == 0.0) and kl.shape == (B,)


@pytest.mark.parametrize("noise", acvi_lib.NOISES)
def test_vanishing_sigma_gives_soft_attention(batch, noise):
    memory, mask, probs = batch
    layer = acvi_lib.ACVIContext(noise=noise, log_var_min=-60.0, seed=1)
    _constant_log_var(layer, memory, -100.0)  # clipped to -60: sigma = 1e-13
    ctx, _ = layer(probs, layer.prepare(memory, mask), training=True)
    np.testing.assert_allclose(ctx, np.einsum("bn,bnd->bd", probs, memory), atol=1e-6)


def test_decode_mean_is_exactly_soft_attention(batch):
    memory, mask, probs = batch
    acvi = acvi_lib.ACVIContext(decode="mean", seed=1)
    sa = context.SoftAttentionContext()
    ctx, _ = acvi(probs, acvi.prepare(memory, mask), training=False)
    np.testing.assert_array_equal(ctx, sa(probs, sa.prepare(memory, mask))[0])
    sampler = acvi_lib.ACVIContext(decode="sample", seed=1)
    sampled, _ = sampler(probs, sampler.prepare(memory, mask), training=False)
    assert not np.allclose(sampled, ctx)


@pytest.mark.parametrize("kl", acvi_lib.KL_ESTIMATORS)
def test_padding_adds_no_weight_and_no_noise(kl):
    """Garbage in padded positions changes neither the sample nor the KL."""
    rng = np.random.default_rng(1)
    real = rng.normal(size=(1, 3, D)).astype(np.float32)
    padded = np.concatenate([real, np.full((1, 4, D), 50.0, np.float32)], axis=1)
    probs_real = np_masked_softmax(rng.normal(size=(1, 3)), np.ones((1, 3), bool))
    probs_padded = np.concatenate([probs_real, np.zeros((1, 4))], axis=1).astype(np.float32)
    layer = acvi_lib.ACVIContext(kl=kl, noise="collapsed", seed=1)
    seed = tf.constant([3, 4])
    ctx_a, kl_a = layer(
        probs_real.astype(np.float32), layer.prepare(real), training=True, seed=seed
    )
    ctx_b, kl_b = layer(
        probs_padded, layer.prepare(padded, _mask([3], 7)), training=True, seed=seed
    )
    np.testing.assert_allclose(ctx_a, ctx_b, rtol=1e-6)
    np.testing.assert_allclose(kl_a, kl_b, rtol=1e-5)


def _moment_batch(num_draws):
    """One example tiled num_draws times: 4 positions, the last one padding with garbage."""
    rng = np.random.default_rng(2)
    memory = rng.normal(size=(1, 4, D)).astype(np.float32)
    memory[0, 3] = 100.0
    mask = _mask([3], 4)
    probs = np_masked_softmax(rng.normal(size=(1, 4)), mask).astype(np.float32)
    tile = lambda x: np.repeat(x, num_draws, axis=0)  # noqa: E731
    return tile(memory), tile(mask), tile(probs)


def test_collapsed_and_per_component_noise_have_the_analytic_moments():
    num_draws = 20000
    memory, mask, probs = _moment_batch(num_draws)
    draws, variance = {}, None
    for noise in acvi_lib.NOISES:
        layer = acvi_lib.ACVIContext(noise=noise, seed=7)
        # log sigma^2 depends on h, so components differ in variance.
        _set_variance_net(
            layer,
            memory,
            np.eye(D, dtype=np.float32),
            np.zeros(D, np.float32),
            np.eye(D, dtype=np.float32),
            np.full(D, -1.0, np.float32),
        )
        prepared = layer.prepare(memory, mask)
        variance = prepared.own.variance.numpy()[0]
        draws[noise] = layer(probs, prepared, training=True)[0].numpy()
    a = probs[0].astype(np.float64)
    mean = a @ memory[0]
    var = (a**2) @ variance
    assert np.ptp(variance[:3], axis=0).max() > 0.5  # components really differ
    for noise, c in draws.items():
        se_mean = np.sqrt(var / num_draws)
        assert np.all(np.abs(c.mean(0) - mean) < 4.5 * se_mean), noise
        se_var = var * np.sqrt(2.0 / (num_draws - 1))
        assert np.all(np.abs(c.var(0, ddof=1) - var) < 4.5 * se_var), noise
    # and with each other (two-sample, same tolerance for the difference)
    diff = draws["collapsed"].mean(0) - draws["per_component"].mean(0)
    assert np.all(np.abs(diff) < 4.5 * np.sqrt(2 * var / num_draws))


def _mixture_setup(dim):
    """Three components in `dim` dimensions with different, known variances."""
    h = np.array([[-1.0, 0.3], [0.5, -0.8], [1.6, 1.1]], np.float32)[:, :dim]
    a = np.array([0.5, 0.3, 0.2], np.float32)
    layer = acvi_lib.ACVIContext(kl="mc", seed=3)
    # log sigma^2 = 0.8 relu(h) - 0.7, a different variance for every component.
    _set_variance_net(
        layer,
        h[None],
        np.eye(dim, dtype=np.float32),
        np.zeros(dim, np.float32),
        0.8 * np.eye(dim, dtype=np.float32),
        np.full(dim, -0.7, np.float32),
    )
    var = np.exp(0.8 * np.maximum(h, 0.0) - 0.7).astype(np.float64)
    return layer, h, a, var


def _true_kl(h, a, var):
    """KL[sum_i a_i N(h_i, var_i) || N(0, I)] by quadrature on a grid (1-D or 2-D)."""
    dim = h.shape[1]
    axis = np.linspace(-9.0, 9.0, 4001 if dim == 1 else 701)
    grid = np.stack(np.meshgrid(*([axis] * dim), indexing="ij"), axis=-1).reshape(-1, dim)
    log_q = np.logaddexp.reduce(
        [np.log(a[i]) + np_log_normal(grid, h[i], var[i]) for i in range(len(a))], axis=0
    )
    log_p = np_log_normal(grid, np.zeros(dim), np.ones(dim))
    cell = (axis[1] - axis[0]) ** dim
    return float(np.sum(np.exp(log_q) * (log_q - log_p)) * cell)


def _mixture_draws(h, a, var, num, seed):
    rng = np.random.default_rng(seed)
    z = rng.choice(len(a), size=num, p=a)
    return (h[z] + np.sqrt(var[z]) * rng.normal(size=(num, h.shape[1]))).astype(np.float32)


@pytest.mark.parametrize("dim", [1, 2])
def test_mc_kl_averages_to_the_true_kl(dim):
    layer, h, a, var = _mixture_setup(dim)
    num = 100000
    prepared = layer.prepare(np.repeat(h[None], num, 0))
    samples = _mixture_draws(h, a, var, num, seed=dim)
    kl = layer.kl_divergence(samples[:, None], np.tile(a, (num, 1, 1)), prepared).numpy()
    truth = _true_kl(h.astype(np.float64), a, var)
    assert abs(kl.mean() - truth) < 4.5 * kl.std() / np.sqrt(num) + 1e-3, (kl.mean(), truth)


@pytest.mark.parametrize("dim", [1, 2])
def test_gumbel_at_low_temperature_samples_the_mixture_and_its_kl(dim):
    layer, h, a, var = _mixture_setup(dim)
    gumbel = acvi_lib.ACVIContext(sampling="gumbel", gumbel_temperature=1e-3, kl="mc", seed=5)
    gumbel.prepare(h[None])
    gumbel.set_weights(layer.get_weights())
    num = 100000
    _, kl = gumbel(np.tile(a, (num, 1)), gumbel.prepare(np.repeat(h[None], num, 0)), training=True)
    kl = kl.numpy()
    truth = _true_kl(h.astype(np.float64), a, var)
    assert abs(kl.mean() - truth) < 4.5 * kl.std() / np.sqrt(num) + 1e-3, (kl.mean(), truth)


@pytest.mark.parametrize("dim", [1, 2])
def test_mixture_sampling_draws_from_q_so_mc_averages_to_the_true_kl(dim):
    layer, h, a, var = _mixture_setup(dim)
    mixture = acvi_lib.ACVIContext(sampling="mixture", kl="mc", seed=5)
    mixture.prepare(h[None])
    mixture.set_weights(layer.get_weights())
    num = 100000
    _, kl = mixture(
        np.tile(a, (num, 1)), mixture.prepare(np.repeat(h[None], num, 0)), training=True
    )
    kl = kl.numpy()
    truth = _true_kl(h.astype(np.float64), a, var)
    assert abs(kl.mean() - truth) < 4.5 * kl.std() / np.sqrt(num) + 1e-3, (kl.mean(), truth)


@pytest.mark.parametrize(
    "options", [dict(sampling="gumbel"), dict(sampling="mixture"), dict(gumbel_fraction=0.1)]
)
def test_exact_is_refused_where_eq_25_does_not_draw(options):
    with pytest.raises(ValueError, match="exact"):
        acvi_lib.ACVIContext(kl="exact", **options)


@pytest.mark.parametrize("dim", [1, 2])
def test_bound_is_exact_formula_and_above_the_true_kl(dim):
    _, h, a, var = _mixture_setup(dim)
    layer, _, _, _ = _mixture_setup(dim)
    bound_layer = acvi_lib.ACVIContext(kl="bound")
    bound_layer.prepare(h[None])
    bound_layer.set_weights(layer.get_weights())
    _, kl = bound_layer(a[None], bound_layer.prepare(h[None]), training=True)
    expected = np.sum(a * 0.5 * np.sum(var + h**2 - 1 - np.log(var), axis=-1))
    np.testing.assert_allclose(kl.numpy()[0], expected, rtol=1e-5)
    assert kl.numpy()[0] >= _true_kl(h.astype(np.float64), a, var)


def test_log_posterior_matches_numpy(batch):
    memory, mask, probs = batch
    layer = acvi_lib.ACVIContext(kl="mc")
    prepared = layer.prepare(memory, mask)
    var = prepared.own.variance.numpy().astype(np.float64)
    c = np.random.default_rng(4).normal(size=(B, 1, D)).astype(np.float32)
    ours = layer.log_posterior(c, probs[:, None], prepared).numpy()[:, 0]
    for b in range(B):
        real = mask[b]
        comps = np.log(probs[b, real]) + np_log_normal(c[b, 0], memory[b, real], var[b, real])
        np.testing.assert_allclose(ours[b], np.logaddexp.reduce(comps), rtol=1e-5, atol=1e-5)
    kl = layer.kl_divergence(c, probs[:, None], prepared).numpy()[:, 0]
    log_prior = np_log_normal(c[:, 0], np.zeros(D), np.ones(D))
    np.testing.assert_allclose(kl, ours - log_prior, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kl", acvi_lib.KL_ESTIMATORS)
@pytest.mark.parametrize("noise", acvi_lib.NOISES)
@pytest.mark.parametrize("extreme", [-1e4, 1e4])
def test_kl_and_gradients_stay_finite_for_extreme_sigma(kl, noise, extreme):
    rng = np.random.default_rng(5)
    memory = tf.constant(rng.normal(size=(B, N, D)) * 30, tf.float32)
    mask = _mask()
    scores = rng.normal(size=(B, N)) * 200  # some real positions underflow to 0
    probs = tf.constant(np_masked_softmax(scores, mask), tf.float32)
    layer = acvi_lib.ACVIContext(kl=kl, noise=noise, seed=2)
    _constant_log_var(layer, memory.numpy(), extreme)
    with tf.GradientTape() as tape:
        tape.watch([memory, probs])
        ctx, kl_value = layer(probs, layer.prepare(memory, mask), training=True)
        loss = tf.reduce_sum(ctx) + tf.reduce_sum(kl_value)
    grads = tape.gradient(loss, [memory, probs] + layer.trainable_weights)
    assert np.all(np.isfinite(ctx)) and np.all(np.isfinite(kl_value))
    for g in grads:
        assert g is not None and np.all(np.isfinite(tf.convert_to_tensor(g)))


def test_gumbel_low_temperature_is_one_hot_with_the_attention_frequencies():
    num = 20000
    mask = np.tile(_mask([4], 6), (num, 1))
    probs = np.tile(
        np_masked_softmax(np.array([[0.3, -1.0, 1.2, 0.1, 5.0, 5.0]]), mask[:1]), (num, 1)
    ).astype(np.float32)
    layer = acvi_lib.ACVIContext(sampling="gumbel", gumbel_temperature=0.01, seed=11)
    z = layer.gumbel_weights(probs[:, None], tf.constant(mask, tf.float32)).numpy()[:, 0]
    assert np.mean(z.max(-1)) > 0.99
    assert np.all(z[:, 4:] == 0.0)
    freq = np.bincount(z.argmax(-1), minlength=6) / num
    se = np.sqrt(probs[0] * (1 - probs[0]) / num)
    assert np.all(np.abs(freq - probs[0]) < 4.5 * se + 1e-9)
    warm = acvi_lib.ACVIContext(sampling="gumbel", gumbel_temperature=5.0, seed=11)
    assert (
        np.mean(warm.gumbel_weights(probs[:, None], mask.astype(np.float32)).numpy().max(-1)) < 0.9
    )


def test_gumbel_schedule_switches_at_the_right_step():
    layer = acvi_lib.ACVIContext(gumbel_fraction=0.1)
    active = [bool(layer.gumbel_active(s, 1000)) for s in range(1000)]
    assert not any(active[:900]) and all(active[900:])
    stepper = tf.function(lambda s: layer.gumbel_active(s, 1000))
    assert not bool(stepper(tf.constant(899, tf.int64)))
    assert bool(stepper(tf.constant(900, tf.int64)))
    assert not bool(acvi_lib.ACVIContext().gumbel_active(999, 1000))
    assert bool(acvi_lib.ACVIContext(sampling="gumbel").gumbel_active(0, 1000))
    assert not bool(context.SoftAttentionContext().gumbel_active(999, 1000))


def test_use_gumbel_tensor_selects_the_gumbel_path(batch):
    memory, mask, probs = batch
    layer = acvi_lib.ACVIContext(seed=1)
    prepared = layer.prepare(memory, mask)
    seed = tf.constant([5, 6])

    def run(flag):
        return layer(probs, prepared, training=True, use_gumbel=flag, seed=seed)[0].numpy()

    np.testing.assert_array_equal(run(tf.constant(True)), run(True))
    np.testing.assert_array_equal(run(tf.constant(False)), run(False))
    assert not np.allclose(run(True), run(False))


def test_gradients_reach_variance_net_scorer_and_encoder():
    rng = np.random.default_rng(6)
    tokens = tf.constant(rng.integers(1, 20, size=(B, N)))
    mask = tf.constant(_mask())
    embedding = keras.layers.Embedding(20, 8)
    encoder = keras.layers.Bidirectional(keras.layers.LSTM(4, return_sequences=True))
    scorer = attention.AdditiveScorer(6, use_coverage=True)
    layer = acvi_lib.ACVIContext(seed=3)
    readout = keras.layers.Dense(1)
    query = tf.constant(rng.normal(size=(B, 5)), tf.float32)
    coverage = tf.constant(rng.uniform(size=(B, N)), tf.float32)
    with tf.GradientTape() as tape:
        memory = encoder(embedding(tokens), mask=mask)
        probs = scorer(query, scorer.prepare(memory), mask, coverage=coverage)
        ctx, kl = layer(probs, layer.prepare(memory, mask), training=True)
        loss = tf.reduce_mean(readout(ctx)) + tf.reduce_mean(kl)
    variables = (
        layer.trainable_weights
        + scorer.trainable_weights
        + encoder.trainable_weights
        + embedding.trainable_weights
    )
    names = [v.name for v in layer.trainable_weights]
    assert any("W1" in n for n in names) and any("W2" in n for n in names)
    for var, grad in zip(variables, tape.gradient(loss, variables)):
        assert grad is not None, var.name
        assert np.any(tf.convert_to_tensor(grad).numpy() != 0), var.name


def test_many_steps_at_once_equal_step_by_step(batch):
    memory, mask, _ = batch
    rng = np.random.default_rng(8)
    probs = np_masked_softmax(rng.normal(size=(B, 4, N)), mask[:, None]).astype(np.float32)
    layer = acvi_lib.ACVIContext(decode="mean")
    prepared = layer.prepare(memory, mask)
    ctx, kl = layer(probs, prepared)
    assert ctx.shape == (B, 4, D) and kl.shape == (B, 4)
    for t in range(4):
        ctx_t, kl_t = layer(probs[:, t], prepared)
        np.testing.assert_allclose(ctx[:, t], ctx_t, rtol=1e-6)
        np.testing.assert_allclose(kl[:, t], kl_t, rtol=1e-5)


@pytest.mark.parametrize("kl", acvi_lib.KL_ESTIMATORS)
def test_kl_after_the_loop_equals_kl_inside_it(batch, kl):
    memory, mask, _ = batch
    probs = np_masked_softmax(
        np.random.default_rng(9).normal(size=(B, 4, N)), mask[:, None]
    ).astype(np.float32)
    layer = acvi_lib.ACVIContext(kl=kl, seed=2)
    prepared = layer.prepare(memory, mask)
    seeds = [tf.constant([7, t]) for t in range(4)]
    in_loop = [layer(probs[:, t], prepared, training=True, seed=seeds[t]) for t in range(4)]
    contexts = tf.stack(
        [layer.draw(probs[:, t], prepared, training=True, seed=seeds[t]) for t in range(4)], axis=1
    )
    after = layer.kl_divergence(contexts, probs, prepared)
    np.testing.assert_array_equal(contexts, tf.stack([c for c, _ in in_loop], axis=1))
    np.testing.assert_allclose(
        after, tf.stack([k for _, k in in_loop], axis=1), rtol=1e-5, atol=1e-5
    )


def test_tiling_for_monte_carlo_samples():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    tiled = context.tile_for_samples(x, 3)
    np.testing.assert_array_equal(tiled, [[1, 2]] * 3 + [[3, 4]] * 3)
    np.testing.assert_array_equal(context.average_over_samples(tiled, 3), x)
    per_sample = tf.constant([1.0, 2.0, 6.0, 10.0, 20.0, 30.0])
    np.testing.assert_allclose(context.average_over_samples(per_sample, 3), [3.0, 20.0])
    memory, mask, probs = (
        np.ones((1, 2, D), np.float32),
        np.ones((1, 2), bool),
        np.array([[0.5, 0.5]], np.float32),
    )
    layer = acvi_lib.ACVIContext(num_samples=4, seed=1)
    k = layer.num_samples
    ctx, _ = layer(
        context.tile_for_samples(probs, k),
        layer.prepare(context.tile_for_samples(memory, k), context.tile_for_samples(mask, k)),
        training=True,
    )
    assert len({tuple(row) for row in np.round(ctx.numpy(), 6)}) == k  # independent draws


def test_config_round_trip_and_same_outputs(batch):
    memory, mask, probs = batch
    layer = acvi_lib.ACVIContext(
        variance_net="relu",
        sampling="approx",
        gumbel_fraction=0.1,
        gumbel_temperature=0.7,
        noise="per_component",
        num_samples=2,
        kl="bound",
        kl_weight=0.5,
        decode="sample",
        log_var_min=-5.0,
        log_var_max=4.0,
        seed=9,
    )
    clone = acvi_lib.ACVIContext.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    seed = tf.constant([1, 2])
    out = layer(probs, layer.prepare(memory, mask), training=True, seed=seed)
    clone.prepare(memory, mask)
    clone.set_weights(layer.get_weights())
    again = clone(probs, clone.prepare(memory, mask), training=True, seed=seed)
    for x, y in zip(out, again):
        np.testing.assert_array_equal(x, y)
    sa = context.SoftAttentionContext.from_config(context.SoftAttentionContext().get_config())
    assert isinstance(sa, context.SoftAttentionContext)


def test_relu_variance_net_gives_variance_at_least_one(batch):
    memory, mask, _ = batch
    layer = acvi_lib.ACVIContext(variance_net="relu")
    prepared = layer.prepare(memory, mask)
    assert np.all(prepared.own.variance.numpy() >= 1.0)
    assert len(layer.trainable_weights) == 2


@pytest.mark.parametrize("noise", acvi_lib.NOISES)
@pytest.mark.parametrize("kl", acvi_lib.KL_ESTIMATORS)
def test_runs_under_xla(batch, noise, kl):
    memory, mask, probs = batch
    scorer = attention.AdditiveScorer(4, use_coverage=True)
    # exact has no Gumbel phase (refused); the mixture sampler runs in its place
    options = dict(sampling="mixture") if kl == "exact" else dict(gumbel_fraction=0.5)
    layer = acvi_lib.ACVIContext(noise=noise, kl="mc" if kl == "exact" else kl, seed=4, **options)
    query = tf.constant(np.random.default_rng(9).normal(size=(B, 6)), tf.float32)

    def step(training, step_number):
        probs = scorer(query, scorer.prepare(memory), mask, coverage=tf.zeros((B, N)))
        return layer(
            probs,
            layer.prepare(memory, mask),
            training=training,
            use_gumbel=layer.gumbel_active(step_number, 10),
        )

    eager_mean = step(False, tf.constant(0, tf.int64))
    compiled = tf.function(step, jit_compile=True)
    xla_mean = compiled(False, tf.constant(0, tf.int64))
    for x, y in zip(eager_mean, xla_mean):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
    for step_number in (0, 9):  # approx, then the Gumbel tail
        ctx, kl_value = compiled(True, tf.constant(step_number, tf.int64))
        assert np.all(np.isfinite(ctx)) and np.all(np.isfinite(kl_value))
    assert not np.allclose(ctx, xla_mean[0])


@pytest.mark.parametrize("half", [tf.float16, tf.bfloat16])
def test_mixed_precision_keeps_variance_and_kl_in_float32(batch, half):
    memory, mask, probs = batch
    keras.mixed_precision.set_global_policy("mixed_" + half.name)
    layer = acvi_lib.ACVIContext(seed=1)
    prepared = layer.prepare(tf.cast(memory, half), mask)
    ctx, kl = layer(probs, prepared, training=True)
    assert ctx.dtype == half and kl.dtype == tf.float32
    assert prepared.own.variance.dtype == tf.float32
    assert all(w.dtype == tf.float32 for w in layer.weights)
    assert np.all(np.isfinite(kl))


def test_generator_state_is_checkpointed(tmp_path, batch):
    memory, mask, probs = batch
    layer = acvi_lib.ACVIContext(seed=12)
    prepared = layer.prepare(memory, mask)
    checkpoint = tf.train.Checkpoint(context=layer)
    path = checkpoint.save(str(tmp_path / "ckpt"))
    first = layer(probs, prepared, training=True)[0].numpy()
    assert not np.allclose(first, layer(probs, prepared, training=True)[0])
    checkpoint.restore(path)
    np.testing.assert_array_equal(first, layer(probs, prepared, training=True)[0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"variance_net": "tanh"}, "variance_net"),
        ({"sampling": "exact"}, "sampling"),
        ({"noise": "shared"}, "noise"),
        ({"kl": "analytic"}, "kl"),
        ({"decode": "max"}, "decode"),
        ({"gumbel_fraction": 1.5}, "gumbel_fraction"),
        ({"gumbel_temperature": 0}, "temperature"),
        ({"num_samples": 0}, "num_samples"),
        ({"kl_weight": -1}, "kl_weight"),
        ({"log_var_min": 3, "log_var_max": 3}, "log_var_min"),
    ],
)
def test_bad_options_are_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        acvi_lib.ACVIContext(**kwargs)


def test_acvi_statistics_are_the_mean_sigma_over_real_positions(batch):
    memory, mask, _ = batch
    layer = acvi_lib.ACVIContext(seed=1)
    prepared = layer.prepare(memory, mask)
    stats = {name: float(value) for name, value in layer.statistics(prepared).items()}
    log_var = np.log(prepared.own.variance.numpy()[mask])  # [real positions, D]
    np.testing.assert_allclose(stats["sigma/mean_log_variance"], log_var.mean(), rtol=1e-5)
    np.testing.assert_allclose(stats["sigma/mean_sigma"], np.exp(log_var / 2).mean(), rtol=1e-5)
    assert context.SoftAttentionContext().statistics(prepared) == {}

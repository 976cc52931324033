"""Scorers against NumPy references, masking, config round trips."""

import numpy as np
import pytest
import tensorflow as tf
from references import np_masked_softmax

from acvi_tf.compat import keras
from acvi_tf.contexts import attention

B, N, D, Q = 3, 6, 5, 4
LENGTHS = [6, 4, 1]


@pytest.fixture
def inputs():
    rng = np.random.default_rng(0)
    memory = rng.normal(size=(B, N, D)).astype(np.float32)
    query = rng.normal(size=(B, Q)).astype(np.float32)
    mask = np.arange(N)[None, :] < np.array(LENGTHS)[:, None]
    return memory, query, mask


def _check_probs(probs, mask):
    probs = np.asarray(probs)
    assert np.all(probs[~np.broadcast_to(mask, probs.shape)] == 0.0)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("mask_mode", attention.MASK_MODES)
def test_additive_matches_numpy(inputs, mask_mode):
    memory, query, mask = inputs
    coverage = np.random.default_rng(1).uniform(size=(B, N)).astype(np.float32) * mask
    scorer = attention.AdditiveScorer(7, use_coverage=True, mask_mode=mask_mode)
    probs = scorer(query, scorer.prepare(memory), mask, coverage=coverage).numpy()

    w_h = scorer.memory_projection.kernel.numpy()
    w_s, b = scorer.query_projection.kernel.numpy(), scorer.query_projection.bias.numpy()
    v = scorer.energy.kernel.numpy()[:, 0]
    w_c = scorer.coverage_projection.kernel.numpy()[0]
    features = memory @ w_h + (query @ w_s + b)[:, None, :] + coverage[..., None] * w_c
    expected = np_masked_softmax(np.tanh(features) @ v, mask)
    np.testing.assert_allclose(probs, expected, rtol=1e-5, atol=1e-7)
    _check_probs(probs, mask)


@pytest.mark.parametrize("shape", [(B, N), (B, 3, N)])
def test_coverage_feature_value_and_gradients_match_numpy(shape):
    rng = np.random.default_rng(3)
    coverage = rng.uniform(size=shape).astype(np.float32)
    w_c = rng.normal(size=(1, 7)).astype(np.float32)
    upstream = rng.normal(size=shape + (7,)).astype(np.float32)
    cov_t, w_t = tf.constant(coverage), tf.constant(w_c)
    with tf.GradientTape() as tape:
        tape.watch([cov_t, w_t])
        value = attention.coverage_feature(cov_t, w_t)
        loss = tf.reduce_sum(value * upstream)
    d_cov, d_w = tape.gradient(loss, [cov_t, w_t])
    np.testing.assert_array_equal(value, coverage[..., None] * w_c[0])
    np.testing.assert_allclose(d_cov, upstream @ w_c[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        d_w, (coverage[..., None] * upstream).reshape(-1, 7).sum(0)[None], rtol=1e-5
    )


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_coverage_gradients_under_mixed_precision_are_float32(inputs, policy):
    memory, query, mask = inputs
    keras.mixed_precision.set_global_policy(policy)
    scorer = attention.AdditiveScorer(8, use_coverage=True)
    coverage = tf.constant(np.random.default_rng(4).uniform(size=(B, N)), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(coverage)
        probs = scorer(query, scorer.prepare(memory), mask, coverage=coverage)
        loss = tf.reduce_sum(probs * tf.range(N, dtype=tf.float32))
    d_cov, d_w = tape.gradient(loss, [coverage, scorer.coverage_projection.kernel])
    assert d_cov.dtype == d_w.dtype == tf.float32
    assert np.all(np.isfinite(d_w)) and np.any(d_w != 0.0) and np.any(d_cov != 0.0)


def test_additive_many_steps_equal_one_step_each(inputs):
    memory, _, mask = inputs
    queries = np.random.default_rng(2).normal(size=(B, 3, Q)).astype(np.float32)
    scorer = attention.AdditiveScorer(8)
    keys = scorer.prepare(memory)
    all_steps = scorer(queries, keys, mask).numpy()
    for t in range(3):
        np.testing.assert_allclose(
            all_steps[:, t], scorer(queries[:, t], keys, mask).numpy(), rtol=1e-6, atol=1e-7
        )


def test_additive_coverage_is_optional_and_only_accepted_with_the_feature(inputs):
    memory, query, mask = inputs
    with_cov = attention.AdditiveScorer(4, use_coverage=True)
    keys = with_cov.prepare(memory)
    no_term = with_cov(query, keys, mask).numpy()
    zeros = with_cov(query, keys, mask, coverage=np.zeros((B, N), np.float32)).numpy()
    np.testing.assert_allclose(no_term, zeros, rtol=1e-6)  # None means no coverage term
    without = attention.AdditiveScorer(4)
    with pytest.raises(ValueError, match="no coverage feature"):
        without(query, without.prepare(memory), mask, coverage=np.zeros((B, N), np.float32))


@pytest.mark.parametrize("scale", [False, True])
def test_luong_general_matches_numpy(inputs, scale):
    memory, query, mask = inputs
    scorer = attention.MultiplicativeScorer(Q, mode="general", scale=scale)
    keys = scorer.prepare(memory)
    scorer(query, keys, mask)  # builds g
    if scale:
        scorer.g.assign(2.5)
    probs = scorer(query, keys, mask).numpy()
    w = scorer.memory_projection.kernel.numpy()  # [D, Q]: h_i^T W s_t
    scores = np.einsum("bnd,dq,bq->bn", memory, w, query) * (2.5 if scale else 1.0)
    np.testing.assert_allclose(probs, np_masked_softmax(scores, mask), rtol=1e-5, atol=1e-7)
    _check_probs(probs, mask)


def test_luong_dot_matches_numpy(inputs):
    memory, _, mask = inputs
    query = np.random.default_rng(3).normal(size=(B, D)).astype(np.float32)
    scorer = attention.MultiplicativeScorer(mode="dot")
    probs = scorer(query, scorer.prepare(memory), mask).numpy()
    expected = np_masked_softmax(np.einsum("bnd,bd->bn", memory, query), mask)
    np.testing.assert_allclose(probs, expected, rtol=1e-5, atol=1e-7)
    assert not scorer.trainable_weights


@pytest.mark.parametrize("causal", [False, True])
def test_scaled_dot_product_matches_numpy(causal):
    rng = np.random.default_rng(4)
    keys = rng.normal(size=(B, N, D)).astype(np.float32)
    queries = rng.normal(size=(B, N, D)).astype(np.float32)
    mask = np.arange(N)[None, :] < np.array(LENGTHS)[:, None]
    scorer = attention.ScaledDotProductScorer(causal=causal)
    probs = scorer(queries, scorer.prepare(keys), mask).numpy()
    scores = np.einsum("btd,bnd->btn", queries, keys) / np.sqrt(D)
    full_mask = np.broadcast_to(mask[:, None, :], (B, N, N))
    if causal:
        full_mask = full_mask & np.tril(np.ones((N, N), bool))[None]
    np.testing.assert_allclose(probs, np_masked_softmax(scores, full_mask), rtol=1e-5, atol=1e-7)
    if causal:  # position t never sees a later position
        assert np.all(np.triu(probs[0], k=1) == 0.0)


def test_causal_incremental_step_sees_all_cached_keys():
    rng = np.random.default_rng(5)
    keys = rng.normal(size=(1, N, D)).astype(np.float32)
    queries = rng.normal(size=(1, N, D)).astype(np.float32)
    scorer = attention.ScaledDotProductScorer(causal=True)
    full = scorer(queries, keys).numpy()
    for t in range(N):  # step t with a cache of keys 0..t equals row t of the full pass
        step = scorer(queries[:, t : t + 1], keys[:, : t + 1]).numpy()
        np.testing.assert_allclose(step[0, 0], full[0, t, : t + 1], rtol=1e-6, atol=1e-7)


def test_mask_modes_agree_and_handle_fully_masked_rows():
    rng = np.random.default_rng(6)
    scores = rng.normal(size=(4, 7)).astype(np.float32) * 5
    mask = rng.uniform(size=(4, 7)) < 0.6
    mask[0] = False  # a row with no real position
    mask[1] = True
    neg_inf = attention.masked_softmax(scores, mask, "neg_inf").numpy()
    renorm = attention.masked_softmax(scores, mask, "renormalize").numpy()
    np.testing.assert_allclose(neg_inf, renorm, rtol=1e-5, atol=1e-7)
    assert np.all(neg_inf[0] == 0) and np.all(renorm[0] == 0)
    rows = mask.any(-1)
    np.testing.assert_allclose(
        neg_inf[rows], np_masked_softmax(scores[rows], mask[rows]), rtol=1e-5, atol=1e-7
    )
    assert np.all(neg_inf[~mask] == 0) and np.all(renorm[~mask] == 0)


def test_padding_content_does_not_change_attention(inputs):
    memory, query, mask = inputs
    scorer = attention.AdditiveScorer(6)
    probs = scorer(query, scorer.prepare(memory), mask).numpy()
    garbage = np.where(mask[..., None], memory, 1e4).astype(np.float32)
    probs_garbage = scorer(query, scorer.prepare(garbage), mask).numpy()
    np.testing.assert_allclose(probs, probs_garbage, rtol=1e-6, atol=1e-8)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="mask_mode"):
        attention.AdditiveScorer(4, mask_mode="zero")
    with pytest.raises(ValueError, match="units"):
        attention.AdditiveScorer(0)
    with pytest.raises(ValueError, match="mode"):
        attention.MultiplicativeScorer(4, mode="concat")
    with pytest.raises(ValueError, match="positive units"):
        attention.MultiplicativeScorer(mode="general")


@pytest.mark.parametrize(
    "make",
    [
        lambda: attention.AdditiveScorer(5, use_coverage=True, mask_mode="renormalize"),
        lambda: attention.MultiplicativeScorer(Q, mode="general", scale=True),
        lambda: attention.MultiplicativeScorer(mode="dot"),
        lambda: attention.ScaledDotProductScorer(causal=True),
    ],
)
def test_config_round_trip_gives_same_layer(inputs, make):
    memory, query, mask = inputs
    scorer = make()
    clone = type(scorer).from_config(scorer.get_config())
    assert clone.get_config() == scorer.get_config()
    if isinstance(scorer, attention.AdditiveScorer):
        q, kwargs = query, {"coverage": np.zeros((B, N), np.float32)}
    elif isinstance(scorer, attention.MultiplicativeScorer) and scorer.mode == "general":
        q, kwargs = query, {}
    else:
        q, kwargs = memory[:, 0], {}
    out = scorer(q, scorer.prepare(memory), mask, **kwargs)
    clone(q, clone.prepare(memory), mask, **kwargs)
    clone.set_weights(scorer.get_weights())
    np.testing.assert_allclose(clone(q, clone.prepare(memory), mask, **kwargs), out, rtol=1e-6)


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_mixed_precision_scores_give_float32_probabilities(inputs, half):
    memory, query, mask = inputs
    keras.mixed_precision.set_global_policy("mixed_" + half)
    scorer = attention.AdditiveScorer(8)
    probs = scorer(query, scorer.prepare(memory), mask)
    assert scorer.compute_dtype == half and probs.dtype == tf.float32
    _check_probs(probs, mask)


def test_bfloat16_additive_features_are_float32_on_a_cpu(inputs, monkeypatch):
    """Under mixed_bfloat16 on a CPU only the products run in bfloat16: the scores are
    float32 arithmetic on the bfloat16 products, up to those products' rounding; with a
    GPU everything is bfloat16."""
    memory, query, mask = inputs
    coverage = np.random.default_rng(5).uniform(size=(B, N)).astype(np.float32) * mask
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    scorer = attention.AdditiveScorer(7, use_coverage=True)
    keys = scorer.prepare(memory)
    probs = scorer(query, keys, mask, coverage=coverage).numpy()
    assert keys.dtype == tf.float32 and scorer.energy.compute_dtype == "float32"

    def bf16(x):
        return tf.cast(tf.cast(x, tf.bfloat16), tf.float32).numpy()

    w_h, w_s = bf16(scorer.memory_projection.kernel), bf16(scorer.query_projection.kernel)
    b = bf16(scorer.query_projection.bias)
    v = scorer.energy.kernel.numpy()[:, 0]
    w_c = scorer.coverage_projection.kernel.numpy()[0]
    memory_part = bf16(bf16(memory) @ w_h)
    query_part = bf16(bf16(bf16(query) @ w_s) + b)[:, None, :]
    features = memory_part + query_part + coverage[..., None] * w_c
    expected = np_masked_softmax(np.tanh(features) @ v, mask)
    # A bfloat16 product's rounding differs by up to one ulp (2 ** -7 of it) between CPUs'
    # kernels and this NumPy reference, so a score may move by sum_k |v_k| 2 ** -7
    # (|memory part| + |query part|) (tanh' <= 1), and a log probability by twice the
    # largest such move in its row.
    moved = (np.abs(memory_part) + np.abs(query_part)) * 2.0**-7 @ np.abs(v)
    allowed = 2 * np.max(np.where(mask, moved, 0.0), axis=-1, keepdims=True)
    assert np.all(probs[~mask] == 0.0)
    logs = np.log(np.where(mask, probs, 1.0)) - np.log(np.where(mask, expected, 1.0))
    assert np.all(np.abs(logs) <= allowed), (logs, allowed)

    gpu = [tf.config.PhysicalDevice("/physical_device:GPU:0", "GPU")]
    monkeypatch.setattr(
        tf.config, "list_physical_devices", lambda kind=None: gpu if kind == "GPU" else []
    )
    on_gpu = attention.AdditiveScorer(7)
    assert on_gpu.feature_dtype == tf.bfloat16 and on_gpu.prepare(memory).dtype == tf.bfloat16

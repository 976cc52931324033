"""acvi_tf.training.objective: the context mechanism's terms of every host's loss, against
NumPy; and the capped perplexity (acvi_tf.training.losses)."""

import functools

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts import context, kl_schedule, registry
from acvi_tf.training import losses, objective
from pointer_generator import model as pg_lib

B, T = 3, 5
LENGTHS = np.array([5, 2, 4])


def _out(with_sentence_latent=True):
    rng = np.random.default_rng(0)
    out = dict(kl=rng.uniform(0.0, 3.0, (B, T)).astype(np.float32))
    if with_sentence_latent:
        out["kl_z"] = rng.uniform(0.0, 3.0, B).astype(np.float32)
    return out


def _per_sequence_np(values):
    mask = np.arange(T)[None] < LENGTHS[:, None]
    return (values * mask).sum() / B


class _Weighted(context.SoftAttentionContext):
    """A mechanism with a KL weight and a penalty on its weights."""

    kl_weight = 0.3

    def regularization(self):
        return tf.constant(0.7)


class _WeightedWithLatent(_Weighted):
    """The same with a sentence latent of its own, whose KL ``kl_z`` enters the loss."""

    def sentence_latent(self, summary, training=False):
        return super().sentence_latent(summary, training)


def _floored_np(kl, kl_z, free_bits, form):
    """The KLs as the schedule floors them, in NumPy: ``form``'s free bits over the
    real steps (``LENGTHS``); a sentence latent is one group of B examples."""
    if form == "example":
        return np.maximum(kl, free_bits), np.maximum(kl_z, free_bits)
    mask = np.arange(T)[None] < LENGTHS[:, None]
    step_averages = (kl * mask).sum(0) / mask.sum(0)
    assert (step_averages < free_bits).any() and (step_averages >= free_bits).any()
    kl = np.where(step_averages < free_bits, free_bits, kl)
    return kl, kl_z if kl_z.mean() >= free_bits else np.full_like(kl_z, free_bits)


@pytest.mark.parametrize(
    "free_bits, form", [(0.0, "example"), (1.5, "example"), (1.5, "minibatch")]
)
def test_terms_are_weighted_scheduled_normalised_kls_plus_the_regularization(free_bits, form):
    out = _out()
    layer = _WeightedWithLatent()
    schedule = kl_schedule.KLSchedule("linear", 100, free_bits, form)
    per_sequence = functools.partial(losses.per_sequence, lengths=LENGTHS)
    mask = tf.sequence_mask(LENGTHS, T, dtype=tf.float32)
    loss, logs = objective.context_terms(
        out, 25, per_sequence, layer, schedule, tf.reduce_mean, mask
    )
    kl, kl_z = _floored_np(out["kl"], out["kl_z"], free_bits, form)
    expected = 0.3 * 0.25 * _per_sequence_np(kl) + 0.25 * kl_z.mean() + 0.7
    np.testing.assert_allclose(float(loss), expected, rtol=1e-6)
    np.testing.assert_allclose(float(logs["kl"]), _per_sequence_np(out["kl"]), rtol=1e-6)
    np.testing.assert_allclose(float(logs["kl_z"]), out["kl_z"].mean(), rtol=1e-6)
    assert float(logs["kl_factor"]) == 0.25
    # the study's collapse measure: nats per real decoder step, before weight and floor
    real = np.arange(T)[None] < LENGTHS[:, None]
    per_token = (out["kl"] * real).sum() / real.sum()
    np.testing.assert_allclose(float(logs["kl_per_token"]), per_token, rtol=1e-6)


def test_each_mechanism_brings_its_own_weight_and_no_layer_brings_none():
    out = _out(with_sentence_latent=False)
    total = float(tf.reduce_mean(out["kl"]))
    acvi = registry.make_context_layer("acvi")
    out["prepared"] = acvi.prepare(tf.ones([B, 4, 2]))
    loss, logs = objective.context_terms(out, 0, tf.reduce_mean, acvi)
    np.testing.assert_allclose(float(loss), acvi_lib.ACVI_KL_WEIGHT * total, rtol=1e-6)
    assert float(logs["kl_z"]) == 0.0
    assert logs["sigma/mean_sigma"] == acvi.statistics(out["prepared"])["sigma/mean_sigma"]
    loss, logs = objective.context_terms(out, 0, tf.reduce_mean, None)
    assert float(loss) == 0.0 and float(logs["kl"]) == pytest.approx(total)
    assert float(logs["kl_per_token"]) == pytest.approx(total)  # no mask: every step


def test_tile_batch_repeats_rows_and_keeps_scalars():
    batch = dict(ids=tf.constant([[1, 2], [3, 4]]), max_art_oovs=tf.constant(7))
    tiled = objective.tile_batch(batch, 3)
    np.testing.assert_array_equal(tiled["ids"].numpy()[:, 0], [1, 1, 1, 3, 3, 3])
    assert int(tiled["max_art_oovs"]) == 7


def test_perplexity_stays_inside_float32_for_tensorboard():
    assert losses.perplexity(6.0, 3.0) == pytest.approx(np.exp(2.0))
    assert losses.perplexity(1.0, 0.0) == pytest.approx(np.e)  # no tokens: per 1
    diverged = losses.perplexity(1e6, 10.0)
    assert np.isfinite(np.float32(diverged)) and diverged == pytest.approx(np.exp(88.0))


def test_the_sequence_objective_is_the_nll_plus_the_context_terms():
    rng = np.random.default_rng(1)
    out = _out()
    out["logits"] = rng.normal(size=(B, T, 4)).astype(np.float32)
    out["token_nll"] = rng.uniform(size=(B, T)).astype(np.float32)
    targets = rng.integers(0, 4, (B, T)).astype(np.int32)
    layer = _WeightedWithLatent()
    schedule = kl_schedule.KLSchedule("linear", 100)
    results = objective.sequence_objective(out, targets, LENGTHS, 50, layer, schedule)
    nll = _per_sequence_np(out["token_nll"])
    terms = 0.3 * 0.5 * _per_sequence_np(out["kl"]) + 0.5 * out["kl_z"].mean() + 0.7
    np.testing.assert_allclose(float(results["nll"]), nll, rtol=1e-5)
    np.testing.assert_allclose(float(results["total"]), nll + terms, rtol=1e-5)
    assert float(results["tokens"]) == LENGTHS.sum()
    real = np.arange(T)[None] < LENGTHS[:, None]
    per_token = (out["token_nll"] * real).sum() / real.sum()
    np.testing.assert_allclose(float(results["nll_per_token"]), per_token, rtol=1e-6)
    # without a context layer and a sentence latent the total is the NLL
    del out["kl_z"]
    results = objective.sequence_objective(out, targets, LENGTHS, 50, total_key="loss")
    np.testing.assert_allclose(float(results["loss"]), nll, rtol=1e-5)


def test_the_summarizer_s_loss_holds_its_coverage_loss_and_context_terms():
    rng = np.random.default_rng(0)
    mask = np.array([[1, 1, 1], [1, 1, 0]], np.float32)
    batch = dict(
        enc_batch=rng.integers(4, 9, (2, 3)).astype(np.int32),
        enc_padding_mask=mask,
        enc_batch_extend_vocab=rng.integers(4, 9, (2, 3)).astype(np.int32),
        dec_batch=rng.integers(2, 9, (2, 2)).astype(np.int32),
        target_batch=rng.integers(4, 9, (2, 2)).astype(np.int32),
        dec_padding_mask=np.array([[1, 1], [1, 0]], np.float32),
    )
    keras.utils.set_random_seed(2)
    model = pg_lib.PointerGenerator(
        9, 3, 2, context_layer=_Weighted(), rand_unif_init_mag=0.5, cov_loss_wt=0.5
    )
    out = model(batch, training=True, coverage_on=True)
    losses = model.compute_loss(batch, out, tf.constant(0, tf.int64))
    assert float(losses["coverage_loss"]) > 0.01
    # soft attention's KL is zero: the context terms are the regularization
    expected = losses["loss"] + 0.5 * losses["coverage_loss"] + 0.7
    np.testing.assert_allclose(float(losses["total_loss"]), float(expected), rtol=1e-6)
    # Kingma et al.'s free bits average each decoder step's KL over its real examples
    # only: the padded 9 would lift step 1's average (0.2 over the real row) above 1
    model.kl_terms = kl_schedule.KLSchedule(free_bits=1.0)
    # the model's zero kl_z stays out: a mechanism without a sentence latent has no KL_z
    # for the floor to lift to a constant 1 nat
    padded = dict(out, kl=tf.constant([[0.5, 0.2], [0.4, 9.0]]))
    losses = model.compute_loss(batch, padded, tf.constant(0, tf.int64))
    expected += 0.3 * 1.0  # every real step floored to 1 nat, averaged the summarizer's way
    np.testing.assert_allclose(float(losses["total_loss"]), float(expected), rtol=1e-6)


def test_the_sequence_objective_floors_the_averages_of_real_steps_only():
    """The minibatch free bits average each step over the sequences that reach it."""
    kl = np.array([[0.5, 0.2, 0.1, 0.1, 0.1], [0.4, 9.0, 9.0, 9.0, 9.0], [2.0] * 5], np.float32)
    out = dict(_out(with_sentence_latent=False), kl=kl)
    out["logits"] = np.zeros((B, T, 4), np.float32)
    out["token_nll"] = np.zeros((B, T), np.float32)
    targets = np.zeros((B, T), np.int32)
    schedule = kl_schedule.KLSchedule(free_bits=1.0)
    results = objective.sequence_objective(out, targets, LENGTHS, 0, _Weighted(), schedule)
    # step 0 (average 2.9 / 3) is floored, 1 (11.2 / 3), 2 and 3 (2.1 / 2) are not, and
    # 4 is: 0.1 over its one real row, where the padded 9 would make it 11.1 / 3
    floored = kl.copy()
    floored[:, [0, 4]] = 1.0
    expected = 0.3 * _per_sequence_np(floored) + 0.7
    np.testing.assert_allclose(float(results["total"]), expected, rtol=1e-6)

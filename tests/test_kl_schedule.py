"""The KL schedule every host's loss goes through: warm-up factors and free bits."""

import functools

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf.contexts import kl_schedule
from acvi_tf.training import losses


def test_annealing_factors():
    factor = kl_schedule.annealing_factor
    assert float(factor(7, "none")) == 1.0
    assert float(factor(250, "linear", 1000)) == pytest.approx(0.25)
    assert float(factor(5000, "linear", 1000)) == 1.0
    assert float(factor(0, "linear", 1000)) == 0.0
    frozen = (np.tanh(-1.5) + 1) / 2  # VED's original stops updating at step 3000
    assert float(factor(3000, "tanh")) == pytest.approx(frozen, rel=1e-5)
    assert float(factor(9000, "tanh")) == pytest.approx(frozen, rel=1e-5)
    assert float(factor(0, "tanh")) == pytest.approx((np.tanh(-4.5) + 1) / 2, rel=1e-3)
    with pytest.raises(ValueError, match="annealing must be one of"):
        factor(0, "cosine")


def test_term_weights_warms_up_and_floors_each_example_in_the_example_form():
    kl = tf.constant([[0.5, 3.0], [2.0, 0.0]])
    mean = tf.reduce_mean
    plain = kl_schedule.KLSchedule()
    assert float(plain.term(kl, 10, mean, 0.5)) == pytest.approx(0.5 * 1.375)
    warm = kl_schedule.KLSchedule("linear", 100)
    assert float(warm.term(kl, 25, mean, 2.0)) == pytest.approx(2.0 * 0.25 * 1.375)
    free = kl_schedule.KLSchedule(free_bits=1.0, free_bits_form="example")
    # each step's KL below 1 nat counts as 1: (1 + 3 + 2 + 1) / 4
    assert float(free.term(kl, 0, mean)) == pytest.approx(7.0 / 4)
    with tf.GradientTape() as tape:
        tape.watch(kl)
        value = free.term(kl, 0, tf.reduce_sum)
    np.testing.assert_array_equal(tape.gradient(value, kl).numpy(), [[0, 1], [1, 0]])


# Three examples, four decoder steps; the second has two steps, the third three.
KL = np.array([[0.2, 3.0, 0.5, 4.0], [0.4, 0.1, 9.0, 9.0], [3.0, 2.5, 0.3, 7.0]], np.float32)
MASK = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0]], np.float32)


def _minibatch_floor_np(kl, free_bits, mask):
    """Kingma et al.'s floor in NumPy: a column (a step) whose average over its real
    rows is below ``free_bits`` becomes ``free_bits``."""
    average = (kl * mask).sum(0) / mask.sum(0)
    return np.where(average < free_bits, free_bits, kl)


def test_the_minibatch_form_floors_each_step_s_average_over_its_real_examples():
    # step averages over real rows: 3.6 / 3, 5.6 / 3, 0.8 / 2 (9.0 is padding), 4.0 / 1
    floored = kl_schedule.floor_by_minibatch(tf.constant(KL), 1.5, tf.constant(MASK)).numpy()
    expected = KL.copy()
    expected[:, [0, 2]] = 1.5
    np.testing.assert_array_equal(floored, expected)
    np.testing.assert_array_equal(floored, _minibatch_floor_np(KL, 1.5, MASK))
    # without a mask the padded 9.0 counts: step 2 averages 9.8 / 3, above the floor
    unmasked = kl_schedule.floor_by_minibatch(tf.constant(KL), 1.5).numpy()
    np.testing.assert_array_equal(unmasked[:, 2], KL[:, 2])


def test_the_example_form_floors_every_entry():
    floored = kl_schedule.floor_by_example(tf.constant(KL), 1.5).numpy()
    np.testing.assert_array_equal(floored, np.maximum(KL, 1.5))


@pytest.mark.parametrize("form", kl_schedule.FREE_BITS_FORMS)
def test_term_is_the_host_normalisation_of_the_floored_kl_and_its_gradient(form):
    """With tensorflow/nmt's normalisation (real entries summed, divided by B) the
    minibatch form is sum_t (n_t / B) max(free_bits, E_t), Kingma et al.'s objective
    weighted by the examples that have step t; a floored group has no gradient."""
    lengths = MASK.sum(1).astype(np.int32)
    normalise = functools.partial(losses.per_sequence, lengths=lengths)
    kl = tf.constant(KL)
    schedule = kl_schedule.KLSchedule("linear", 4, 1.5, form)
    with tf.GradientTape() as tape:
        tape.watch(kl)
        value = schedule.term(kl, 2, normalise, 0.5, tf.constant(MASK))
    counts, averages = MASK.sum(0), (KL * MASK).sum(0) / MASK.sum(0)
    if form == "minibatch":
        expected = (counts / 3 * np.maximum(1.5, averages)).sum()
        gradient = MASK * (averages >= 1.5) / 3
    else:
        expected = (np.maximum(KL, 1.5) * MASK).sum() / 3
        gradient = MASK * (KL >= 1.5) / 3
    np.testing.assert_allclose(float(value), 0.5 * 0.5 * expected, rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(value, kl).numpy(), 0.25 * gradient, rtol=1e-6)


def test_the_minibatch_form_of_a_per_example_kl_floors_the_batch_average():
    """A sentence latent is one group: its batch average is floored, not each example."""
    kl_z = tf.constant([0.5, 2.0, 1.1])  # average 3.6 / 3 = 1.2
    mean = tf.reduce_mean
    kingma = kl_schedule.KLSchedule(free_bits=1.0)
    assert float(kingma.term(kl_z, 0, mean)) == pytest.approx(1.2)
    assert float(kingma.term(kl_z, 0, mean, mask=None)) == pytest.approx(1.2)
    assert float(kl_schedule.KLSchedule(free_bits=1.5).term(kl_z, 0, mean)) == 1.5
    each = kl_schedule.KLSchedule(free_bits=1.0, free_bits_form="example")
    assert float(each.term(kl_z, 0, mean)) == pytest.approx(4.1 / 3)


def test_an_unknown_form_is_refused():
    with pytest.raises(ValueError, match="free_bits_form must be one of"):
        kl_schedule.KLSchedule(free_bits=1.0, free_bits_form="batch").term(
            tf.ones([2]), 0, tf.reduce_mean
        )


def test_the_example_form_never_costs_less_than_the_minibatch_form():
    """mean_b max(λ, KL_bj) >= max(λ, mean_b KL_bj) (Jensen), equal when every entry of a
    step lies on one side of λ."""
    lengths = MASK.sum(1).astype(np.int32)
    normalise = functools.partial(losses.per_sequence, lengths=lengths)
    mask = tf.constant(MASK)

    def cost(kl, free_bits, form):
        schedule = kl_schedule.KLSchedule(free_bits=free_bits, free_bits_form=form)
        return float(schedule.term(tf.constant(kl), 0, normalise, mask=mask))

    for free_bits in (0.3, 1.0, 1.5, 3.0, 5.0):
        assert cost(KL, free_bits, "example") >= cost(KL, free_bits, "minibatch") - 1e-6
    assert cost(KL, 1.5, "example") > cost(KL, 1.5, "minibatch") + 0.1
    # each step's real entries all below 1.5 (steps 0 and 2) or all above (1 and 3)
    one_side = np.array([[0.5, 2.0, 0.1, 3.0], [0.2, 3.0, 9.0, 9.0], [1.0, 4.0, 0.4, 0.0]])
    one_side = one_side.astype(np.float32)
    assert cost(one_side, 1.5, "example") == pytest.approx(cost(one_side, 1.5, "minibatch"))

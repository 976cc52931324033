"""The KL schedule every host's loss goes through: warm-up factors and free bits."""

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf.contexts import kl_schedule


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


def test_term_weights_warms_up_and_floors_per_step():
    kl = tf.constant([[0.5, 3.0], [2.0, 0.0]])
    mean = tf.reduce_mean
    plain = kl_schedule.KLSchedule()
    assert float(plain.term(kl, 10, mean, 0.5)) == pytest.approx(0.5 * 1.375)
    warm = kl_schedule.KLSchedule("linear", 100)
    assert float(warm.term(kl, 25, mean, 2.0)) == pytest.approx(2.0 * 0.25 * 1.375)
    free = kl_schedule.KLSchedule(free_bits=1.0)
    # each step's KL below 1 nat counts as 1: (1 + 3 + 2 + 1) / 4
    assert float(free.term(kl, 0, mean)) == pytest.approx(7.0 / 4)
    with tf.GradientTape() as tape:
        tape.watch(kl)
        value = free.term(kl, 0, tf.reduce_sum)
    np.testing.assert_array_equal(tape.gradient(value, kl).numpy(), [[0, 1], [1, 0]])

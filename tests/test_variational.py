"""Deng et al.'s categorical variational attention: the enumeration ELBO against the sum it
stands for, its tightness at the exact posterior, the REINFORCE estimator's mean (value and
gradient) against enumeration, alignment sampling, and the inference network."""

import numpy as np
import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.contexts import variational


def _tiny_model(seed=0):
    """3 source states, a 4-word vocabulary: log p(y | x_i) for every i and y."""
    rng = np.random.default_rng(seed)
    memory = rng.normal(size=[3, 5])
    w_gen = rng.normal(size=[5, 4])
    logits = memory @ w_gen
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))  # [N, V]
    prior = rng.dirichlet(np.ones(3))
    q_logits = rng.normal(size=[3])
    return log_p, prior, q_logits


def test_enumerated_elbo_is_the_sum_it_stands_for_and_tight_at_the_posterior():
    log_p, prior, q_logits = _tiny_model()
    q = np.exp(q_logits) / np.exp(q_logits).sum()
    y = 2
    explicit = sum(q[i] * log_p[i, y] for i in range(3)) - sum(
        q[i] * np.log(q[i] / prior[i]) for i in range(3)
    )
    got = variational.enumerated_elbo(log_p[:, y], q, prior)
    np.testing.assert_allclose(float(got), explicit, rtol=1e-5)
    marginal = float(variational.marginal_log_likelihood(log_p[:, y], prior))
    np.testing.assert_allclose(marginal, np.log(np.sum(prior * np.exp(log_p[:, y]))), rtol=1e-5)
    assert float(got) <= marginal + 1e-6  # Jensen
    posterior = prior * np.exp(log_p[:, y])
    posterior /= posterior.sum()
    np.testing.assert_allclose(
        float(variational.enumerated_elbo(log_p[:, y], posterior, prior)), marginal, rtol=1e-5
    )
    masked = variational.enumerated_elbo(
        np.append(log_p[:, y], -np.inf), np.append(q, 0.0), np.append(prior, 0.0), mask=[1, 1, 1, 0]
    )
    np.testing.assert_allclose(float(masked), explicit, rtol=1e-5)


def test_reinforce_mean_matches_enumeration_in_value_and_gradient():
    log_p, prior, q_logits = _tiny_model(1)
    y = 1
    samples = 40000
    log_p_y = tf.constant(log_p[:, y], tf.float32)
    soft = tf.constant(np.log(np.sum(prior * np.exp(log_p[:, y]))), tf.float32)
    logits = tf.Variable(q_logits, dtype=tf.float32)
    generator = tf.random.Generator.from_seed(3)
    with tf.GradientTape(persistent=True) as tape:
        q = tf.nn.softmax(logits)
        exact = -variational.enumerated_elbo(log_p_y, q, prior)
        q_rows = tf.repeat(q[tf.newaxis], samples, axis=0)
        one_hot, log_q = variational.sample_alignment(q_rows, generator)
        log_p_sample = tf.reduce_sum(one_hot * log_p_y, axis=-1)
        kl = variational.categorical_kl(q_rows, tf.constant(prior[None], tf.float32))
        surrogate = variational.reinforce_surrogate(log_p_sample, soft, log_q, kl)
        estimate = tf.reduce_mean(surrogate)
    values = surrogate.numpy()
    assert abs(values.mean() - float(exact)) < 4 * values.std() / np.sqrt(samples)
    exact_grad = tape.gradient(exact, logits).numpy()
    per_sample = []  # the estimator's spread, from 20 independent sub-batch means
    for part in np.split(np.arange(samples), 20):
        with tf.GradientTape() as inner:
            q = tf.nn.softmax(logits)
            log_q_part = tf.reduce_sum(tf.gather(one_hot, part) * tf.math.log(q), axis=-1)
            kl_part = variational.categorical_kl(q[tf.newaxis], prior[None])
            loss = tf.reduce_mean(
                variational.reinforce_surrogate(
                    tf.gather(log_p_sample, part), soft, log_q_part, kl_part
                )
            )
        per_sample.append(inner.gradient(loss, logits).numpy())
    per_sample = np.array(per_sample)
    mean_grad = tape.gradient(estimate, logits).numpy()
    tolerance = 4 * per_sample.std(axis=0) / np.sqrt(len(per_sample)) + 1e-4
    assert np.all(np.abs(mean_grad - exact_grad) < tolerance), (mean_grad, exact_grad)


def test_sample_alignment_follows_q():
    q = tf.constant([[0.1, 0.6, 0.3, 0.0]], tf.float32)
    one_hot, log_q = variational.sample_alignment(
        tf.repeat(q, 20000, axis=0), tf.random.Generator.from_seed(1)
    )
    freq = one_hot.numpy().mean(0)
    np.testing.assert_allclose(freq, q.numpy()[0], atol=0.015)
    assert freq[3] == 0.0
    np.testing.assert_allclose(
        np.exp(log_q.numpy()), (one_hot.numpy() * q.numpy()).sum(-1), rtol=1e-5
    )
    stateless, _ = variational.sample_alignment(q, seed=tf.constant([1, 2]))
    assert stateless.numpy().sum() == 1.0


def test_inference_network_is_masked_and_sees_the_future_target():
    keras.utils.set_random_seed(0)
    network = variational.InferenceNetwork(4)
    rng = np.random.default_rng(0)
    memory = tf.constant(rng.normal(size=[2, 5, 6]), tf.float32)
    memory_mask = tf.constant([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], tf.float32)
    target = rng.normal(size=[2, 3, 4]).astype(np.float32)
    target_mask = tf.constant([[1, 1, 1], [1, 1, 0]], tf.float32)
    q = network(memory, memory_mask, tf.constant(target), target_mask).numpy()
    np.testing.assert_allclose(q.sum(-1), 1.0, rtol=1e-5)
    assert np.all(q[1, :, 3:] == 0.0)
    changed = target.copy()
    changed[0, 2] += 1.0  # a later target word changes q at step 0
    q2 = network(memory, memory_mask, tf.constant(changed), target_mask).numpy()
    assert not np.allclose(q[0, 0], q2[0, 0])

"""ACVI's training objective against log p(y) on toy models small enough to enumerate.

One decoder step (or two, the second's attention reading the first context), a 1-D
context, N = 3 or 4 components, prior N(0, 1) and a linear-Gaussian likelihood
``p(y | c) = N(y | w c, s^2)``, so that ``log p(y) = log N(y | 0, w^2 + s^2)`` is exact
and every expectation the objective should have is a closed form or a 1-D quadrature.
Each configuration's objective, ``-(token_nll + kl)`` per draw through the real layer
(``draw``, ``kl_divergence``, ``token_losses``, weight 1), is averaged over many draws:

* the configurations docs/acvi.md calls bounds average to the value derived for them
  and that value is <= log p(y);
* those it calls surrogates exceed log p(y) on the case of equal components;
* the gradient of the mixture sampler's loss averages to the enumerated gradient of
  ``-ELBO``: one step, its draws in one group or in groups of 16 and 4 (the baseline's
  groups); two steps where the first choice moves the second step; two steps whose
  second is padding; and with the loop fed the expected context (``feed="mean"``, one
  draw or sum and sample), one and two steps.
"""

import math

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts import context

Y, W, S = 0.7, 1.3, 0.8  # the general toy's observation and likelihood
H = np.array([[-1.5], [0.3], [2.0]])
LOG_VAR = np.array([[-1.0], [0.0], [-0.5]])
LOGITS = np.array([0.2, -0.4, 0.9])
GRID = np.linspace(-14.0, 14.0, 8001)
COARSE_GRID = np.linspace(-10.0, 10.0, 2001)  # for the two-step case's [G, N, G] terms


def _layer(sampling, kl, seed=1, **options):
    layer = acvi_lib.ACVIContext(sampling=sampling, kl=kl, kl_weight=1.0, seed=seed, **options)
    return layer


def _pin_variance(layer, log_var):
    """The variance network replaced by the given log sigma^2 per position [N, 1]."""
    layer.variance_network = lambda memory: tf.broadcast_to(
        tf.cast(log_var, tf.float32), tf.shape(memory)
    )


def _log_lik(y, w, s):
    def log_likelihood(c):
        c = tf.cast(c, tf.float32)[..., 0]
        return -0.5 * math.log(2 * math.pi * s * s) - tf.square(y - w * c) / (2 * s * s)

    return log_likelihood


def _step_losses(layer, contexts, probs, prepared, log_likelihood, mask=None):
    """The layer's ``token_nll + kl`` [draws, T] of the drawn contexts [draws, T, 1], at
    the real steps of ``mask`` [draws, T] (all of them by default), 0 at padded ones as
    a host's sum takes them."""
    mask = tf.ones(tf.shape(contexts)[:2]) if mask is None else mask
    kl = layer.kl_divergence(contexts, probs, prepared)
    gold = context.GoldTarget(
        soft_log_likelihood=log_likelihood(contexts),
        log_likelihood=log_likelihood,
        embedded=None,
        mask=mask,
        contexts=contexts,
    )
    token_nll, kl = layer.token_losses(gold, probs, kl, prepared, training=True)
    return (token_nll + kl) * mask


def _objective(layer, logits, h, log_var, y, w, s, draws, use_gumbel=None):
    """Per-draw ``-(token_nll + kl)`` [draws] and the loss, for one decoder step."""
    _pin_variance(layer, log_var)
    memory = tf.broadcast_to(tf.cast(h, tf.float32), [draws, *h.shape])
    probs = tf.broadcast_to(tf.nn.softmax(tf.cast(logits, tf.float32)), [draws, 1, h.shape[0]])
    prepared = layer.prepare(memory)
    contexts = layer.draw(probs, prepared, training=True, use_gumbel=use_gumbel)
    per_draw = -_step_losses(layer, contexts, probs, prepared, _log_lik(y, w, s))[:, 0]
    return per_draw, -tf.reduce_mean(per_draw)


# Closed forms and quadratures, float64 (differentiable in TF for the gradients).


def _gauss(c, mean, var):
    return tf.exp(-tf.square(c - mean) / (2 * var)) / tf.sqrt(2 * math.pi * var)


def _expected_log_lik(mean, var, y, w, s):
    """``E[log N(y | w c, s^2)]`` for ``c ~ N(mean, var)``."""
    return -0.5 * math.log(2 * math.pi * s * s) - (tf.square(y - w * mean) + w * w * var) / (
        2 * s * s
    )


def _mixture_kl(a, h, var, grid=GRID):
    """``KL[q || N(0, 1)]`` of the 1-D mixture by quadrature on ``grid``: a [..., N]."""
    c = tf.constant(grid)
    q = tf.reduce_sum(a[..., tf.newaxis] * _gauss(c, h[:, tf.newaxis], var[:, tf.newaxis]), -2)
    log_p = -0.5 * tf.square(c) - 0.5 * math.log(2 * math.pi)
    terms = tf.where(q > 0, q * (tf.math.log(tf.maximum(q, 1e-300)) - log_p), 0.0)
    return tf.reduce_sum(terms, -1) * (grid[1] - grid[0])


def _component_kls(h, var):
    return 0.5 * (var + tf.square(h) - 1.0 - tf.math.log(var))


def _enumerated(config, a, h, var, y, w, s):
    """The mean objective each configuration should have, one step (1-D context)."""
    sampling, kl = config
    mixture_lik = tf.reduce_sum(a * _expected_log_lik(h, var, y, w, s))
    if sampling == "mixture" and kl == "mc":
        return mixture_lik - _mixture_kl(a, h, var)
    if sampling == "mixture" and kl == "bound":
        return mixture_lik - tf.reduce_sum(a * _component_kls(h, var))
    mean, spread = tf.reduce_sum(a * h), tf.reduce_sum(a * a * var)
    return _expected_log_lik(mean, spread, y, w, s) - _component_kls(mean, spread)


def _log_evidence(y, w, s):
    return -0.5 * math.log(2 * math.pi * (w * w + s * s)) - y * y / (2 * (w * w + s * s))


def _mean_and_error(values):
    values = np.asarray(values, np.float64)
    return values.mean(), values.std(ddof=1) / math.sqrt(len(values))


BOUNDS = [("mixture", "mc"), ("mixture", "bound"), ("approx", "exact")]


@pytest.mark.parametrize("config", BOUNDS, ids=["-".join(c) for c in BOUNDS])
def test_a_bound_averages_to_its_derived_value_below_log_evidence(config):
    per_draw, _ = _objective(_layer(*config), LOGITS, H, LOG_VAR, Y, W, S, draws=40000)
    mean, error = _mean_and_error(per_draw)
    a = tf.nn.softmax(tf.constant(LOGITS))
    derived = float(
        _enumerated(config, a, tf.constant(H[:, 0]), tf.exp(tf.constant(LOG_VAR[:, 0])), Y, W, S)
    )
    assert abs(mean - derived) < 4 * error, (mean, error, derived)
    assert derived <= _log_evidence(Y, W, S)
    assert mean < _log_evidence(Y, W, S)


# Equal components h_i = 0, sigma_i = 1 under uniform attention: q is the prior itself,
# so KL[q || p] = 0 and the mixture sampler's objective is E_p[log p(y | c)] < log p(y),
# while eq. 25's and the relaxed sampler's narrower draws score higher than log p(y).
EQUAL = dict(logits=np.zeros(4), h=np.zeros((4, 1)), log_var=np.zeros((4, 1)), y=0.0, w=0.5, s=1.0)
SURROGATES = [("approx", "bound"), ("approx", "mc"), ("gumbel", "mc"), ("gumbel", "bound")]


@pytest.mark.parametrize("config", SURROGATES, ids=["-".join(c) for c in SURROGATES])
def test_a_surrogate_exceeds_log_evidence(config):
    per_draw, _ = _objective(_layer(*config), draws=40000, **EQUAL)
    mean, error = _mean_and_error(per_draw)
    assert mean > _log_evidence(EQUAL["y"], EQUAL["w"], EQUAL["s"]) + 4 * error, (mean, error)


@pytest.mark.parametrize("config", BOUNDS, ids=["-".join(c) for c in BOUNDS])
def test_a_bound_stays_below_log_evidence_with_equal_components(config):
    per_draw, _ = _objective(_layer(*config), draws=40000, **EQUAL)
    mean, error = _mean_and_error(per_draw)
    assert mean + 4 * error < _log_evidence(EQUAL["y"], EQUAL["w"], EQUAL["s"]), (mean, error)


def _gradient_estimates(layer, loss_fn, variables, batches):
    """The mean and standard error of ``batches`` gradients of ``loss_fn(layer)``, traced
    once (the layer draws new noise at every call, as in a training step)."""

    @tf.function
    def gradients():
        with tf.GradientTape() as tape:
            loss = loss_fn(layer)
        return tape.gradient(loss, variables)

    rows = []
    for _ in range(batches):
        rows.append(np.concatenate([g.numpy().ravel() for g in gradients()]))
    rows = np.array(rows)
    return rows.mean(0), rows.std(0, ddof=1) / math.sqrt(batches)


def _assert_gradient_matches_enumeration(kl, seed, sampled_loss, enumerated_objective, **options):
    """The mean gradient of ``sampled_loss(layer, logits, h, log_var)`` over 60 x 1000
    draws of the mixture sampler (the layer built with ``options``) equals the gradient
    of ``-enumerated_objective(logits, h, log_var)`` (float64, ``h`` and ``log_var`` per
    position) within 4 standard errors."""
    variables = [tf.Variable(v, dtype=tf.float32) for v in (LOGITS, H, LOG_VAR)]
    mean, error = _gradient_estimates(
        _layer("mixture", kl, seed=seed, **options),
        lambda layer: sampled_loss(layer, *variables),
        variables,
        batches=60,
    )
    exact = [tf.Variable(v, dtype=tf.float64) for v in (LOGITS, H[:, 0], LOG_VAR[:, 0])]
    with tf.GradientTape() as tape:
        value = -enumerated_objective(*exact)
    enumerated = np.concatenate([g.numpy().ravel() for g in tape.gradient(value, exact)])
    assert np.all(np.abs(mean - enumerated) < 4 * error + 1e-3), (mean, error, enumerated)


# The draws' rows in groups: one group of all 1,000 (one sample per example: the batch's
# other rows are the baseline), and groups of 4 and 16 consecutive rows (--acvi_num_samples,
# whose baseline is the example's other samples; a batch of 16 examples with one sample
# each is one group of 16). A baseline that counts its own row's return shrinks the
# score term by 1/group: invisible in a group of 1,000, many standard errors in 4 or 16.
GROUPS = [1, 4, 16]
# feed="mean": the loop reads the expected context, so a draw reaches only its own step's
# output layer and the ELBO is the sum of the steps' one-step ELBOs (the second step's
# attention moved by the first step's expected context). enumerate_top = k > 0 sums the
# k largest-weight components exactly and draws one of the others (sum and sample):
# unbiased for every k, exact from k = N (here 3).
TOPS = [0, 1, 3]
ONE_STEP = [dict(num_samples=group) for group in GROUPS]
ONE_STEP += [dict(feed="mean", enumerate_top=top) for top in TOPS]


@pytest.mark.parametrize(
    "options",
    ONE_STEP,
    ids=["group-%d" % g for g in GROUPS] + ["mean-fed-top-%d" % t for t in TOPS],
)
@pytest.mark.parametrize("kl", ["mc", "bound"])
def test_the_mixture_gradient_averages_to_the_enumerated_gradient(kl, options):
    _assert_gradient_matches_enumeration(
        kl,
        3,
        lambda layer, logits, h, log_var: _objective(
            layer, logits, h, log_var, Y, W, S, draws=1008
        )[1],
        lambda logits, h, log_var: _enumerated(
            ("mixture", kl), tf.nn.softmax(logits), h, tf.exp(log_var), Y, W, S
        ),
        **options,
    )


# Two steps: the second step's attention logits move with the first context,
# u2 + V * c_1 * E, as input feeding makes them; the first choice then changes the
# second step's terms, which only the returns to go credit it for.
U2 = np.array([0.1, 0.5, -0.3])
E = np.array([1.0, 0.0, -1.0])
V = 1.5


def _two_step_objective(layer, logits, h, log_var, draws, mask=None):
    _pin_variance(layer, log_var)
    memory = tf.broadcast_to(h, [draws, *h.shape])
    prepared = layer.prepare(memory)
    first = tf.broadcast_to(tf.nn.softmax(logits), [draws, 1, 3])
    c1 = layer.draw(first, prepared, training=True)
    second = tf.nn.softmax(tf.constant(U2, tf.float32) + V * c1 * tf.constant(E, tf.float32))
    c2 = layer.draw(second, prepared, training=True)
    contexts, probs = tf.concat([c1, c2], 1), tf.concat([first, second], 1)
    losses = _step_losses(layer, contexts, probs, prepared, _log_lik(Y, W, S), mask)
    return tf.reduce_mean(tf.reduce_sum(losses, 1))


def _two_step_enumerated(kl, logits, h, log_var):
    """``E_q1[log p(y | c1) - KL_1 + E_q2[log p(y | c2)] - KL_2(c1)]`` on ``COARSE_GRID``."""
    var = tf.exp(log_var)
    a1 = tf.nn.softmax(logits)
    c1 = tf.constant(COARSE_GRID)
    q1 = tf.reduce_sum(a1[:, tf.newaxis] * _gauss(c1, h[:, tf.newaxis], var[:, tf.newaxis]), 0)
    a2 = tf.nn.softmax(U2 + V * c1[:, tf.newaxis] * E)  # [G, N]
    lik2 = tf.reduce_sum(a2 * _expected_log_lik(h, var, Y, W, S), -1)
    lik1 = _expected_log_lik(c1, 0.0, Y, W, S)
    if kl == "mc":
        kl1, kl2 = _mixture_kl(a1, h, var), _mixture_kl(a2, h, var, COARSE_GRID)
    else:
        component = _component_kls(h, var)
        kl1, kl2 = tf.reduce_sum(a1 * component), tf.reduce_sum(a2 * component, -1)
    inner = lik1 + lik2 - kl2
    return tf.reduce_sum(q1 * inner) * (COARSE_GRID[1] - COARSE_GRID[0]) - kl1


@pytest.mark.parametrize("kl", ["mc", "bound"])
def test_the_first_choice_is_credited_with_the_later_steps(kl):
    _assert_gradient_matches_enumeration(
        kl,
        5,
        lambda layer, logits, h, log_var: _two_step_objective(
            layer, logits, h, log_var, draws=1000
        ),
        lambda logits, h, log_var: _two_step_enumerated(kl, logits, h, log_var),
    )


@pytest.mark.parametrize("kl", ["mc", "bound"])
def test_a_padded_second_step_credits_the_first_choice_with_nothing(kl):
    """Every row's second step is padding (a target of one token): the objective is the
    first step's alone, however the layer scores the padded step, so the gradient is the
    one-step ELBO's. Returns to go that summed the padded step's values would credit the
    first choice with the second step's terms, which move with it."""
    mask = tf.constant([[1.0, 0.0]] * 1000)
    _assert_gradient_matches_enumeration(
        kl,
        7,
        lambda layer, logits, h, log_var: _two_step_objective(
            layer, logits, h, log_var, draws=1000, mask=mask
        ),
        lambda logits, h, log_var: _enumerated(
            ("mixture", kl), tf.nn.softmax(logits), h, tf.exp(log_var), Y, W, S
        ),
    )


def _two_step_mean_fed_enumerated(kl, logits, h, log_var):
    """The first step's ELBO plus the second's, whose attention reads ``sum_i a_1,i h_i``."""
    var, first = tf.exp(log_var), tf.nn.softmax(logits)
    second = tf.nn.softmax(U2 + V * tf.reduce_sum(first * h) * E)
    return _enumerated(("mixture", kl), first, h, var, Y, W, S) + _enumerated(
        ("mixture", kl), second, h, var, Y, W, S
    )


@pytest.mark.parametrize("kl,top", [("mc", 0), ("bound", 0), ("mc", 1)])
def test_a_mean_fed_first_step_moves_the_second_by_its_expected_context(kl, top):
    _assert_gradient_matches_enumeration(
        kl,
        5,
        lambda layer, logits, h, log_var: _two_step_objective(
            layer, logits, h, log_var, draws=1000
        ),
        lambda logits, h, log_var: _two_step_mean_fed_enumerated(kl, logits, h, log_var),
        feed="mean",
        enumerate_top=top,
    )


def test_a_mean_fed_step_averages_to_the_one_step_elbo_below_log_evidence():
    layer = _layer("mixture", "mc", feed="mean")
    per_draw, _ = _objective(layer, LOGITS, H, LOG_VAR, Y, W, S, draws=40000)
    mean, error = _mean_and_error(per_draw)
    a = tf.nn.softmax(tf.constant(LOGITS))
    var = tf.exp(tf.constant(LOG_VAR[:, 0]))
    derived = float(_enumerated(("mixture", "mc"), a, tf.constant(H[:, 0]), var, Y, W, S))
    assert abs(mean - derived) < 4 * error, (mean, error, derived)
    assert mean < _log_evidence(Y, W, S)

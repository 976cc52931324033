"""Amortized Context Vector Inference (ACVI): the context vector ``c_t`` as a latent
variable with the Gaussian-mixture posterior ``sum_i a_t,i N(h_i, diag sigma^2(h_i))``
(attention probabilities as the weights, encoder states as the means, ``VarianceNetwork``
for the variances) and the KL terms of its objective.

The layer keeps ``context.ContextLayer``'s contract; docs/acvi.md derives each estimator.
Equations refer to the arXiv version of the ACVI paper unless marked "journal".
"""

import math
from typing import Any, Dict, NamedTuple, Optional, Tuple, Union

import numpy as np
import tensorflow as tf
from absl import flags, logging

from acvi_tf.compat import keras
from acvi_tf.contexts.attention import check_choice, masked_softmax
from acvi_tf.contexts.context import (
    ContextLayer,
    GoldTarget,
    contract,
    expected_context,
    position_scale,
    random_generator,
    sampling_options,
)
from acvi_tf.contexts.loop_gradients import DeferredContractions
from acvi_tf.contexts.memory import PreparedMemory

VARIANCE_NETS = ("mlp", "relu")
SAMPLINGS = ("approx", "gumbel", "mixture")
NOISES = ("collapsed", "per_component")
KL_ESTIMATORS = ("mc", "bound", "exact")
DECODE_MODES = ("mean", "sample")
FEEDS = ("sample", "mean")
# The flags that decide the layer's variables.
MODEL_FLAGS = ("acvi_variance_net",)

# The default weight of ACVI's KL term, and the KL term itself; docs/acvi.md gives the
# study they come from.
ACVI_KL_WEIGHT = 0.001
ACVI_KL = "bound"

# log sigma^2 is clipped to this range by default: sigma in [6.7e-3, 148]. It keeps
# 1 / sigma^2 and sigma^2 finite and well inside float32 in the KL terms, whatever the
# variance network outputs, so neither the KL nor its gradient can become NaN.
DEFAULT_LOG_VAR_MIN = -10.0
DEFAULT_LOG_VAR_MAX = 10.0

_LOG_2PI = math.log(2.0 * math.pi)
# Attention probabilities below this count as 0 inside logs (log 1e-30 = -69): keeps the
# gradient of log a finite where a softmax underflowed.
_TINY_PROB = 1e-30
# Floor under the collapsed noise variance so the gradient of sqrt stays finite.
_TINY_VAR = 1e-20
_MASKED_LOGIT = -1e9


class ACVIMemory(NamedTuple):
    """What ACVI caches per source batch beside the encoder states and their mask
    (``PreparedMemory.own``).

    Attributes:
      variance: ``sigma^2(h_i)``, [B, N, D].
      precision: ``1 / sigma^2(h_i)``, [B, N, D] in float64 (where ``log q(c)`` is
        evaluated: ``kl="mc"`` or ``sampling="mixture"``).
      scaled_mean: ``h_i / sigma^2(h_i)``, [B, N, D] in float64 (the same).
      log_norm: ``-1/2 sum_d (log 2 pi + log sigma^2 + h^2 / sigma^2)``, [B, N] in
        float64 (the same), so that ``log N(c | h_i, sigma_i^2) = log_norm_i
        - 1/2 c^2 . precision_i + c . scaled_mean_i``.
      component_kl: ``KL[N(h_i, sigma_i^2) || N(0, I)]``, [B, N] (``kl="bound"``).
    """

    variance: tf.Tensor
    precision: Optional[tf.Tensor] = None
    scaled_mean: Optional[tf.Tensor] = None
    log_norm: Optional[tf.Tensor] = None
    component_kl: Optional[tf.Tensor] = None


def component_kl(memory: tf.Tensor, log_variance: tf.Tensor) -> tf.Tensor:
    """``KL[N(h_i, diag sigma_i^2) || N(0, I)] = 1/2 sum_d (sigma^2 + h^2 - 1 - log sigma^2)``
    per source position: [..., N, D] -> [..., N] (the terms of ACVI's bound)."""
    return 0.5 * tf.reduce_sum(
        tf.exp(log_variance) + tf.square(memory) - 1.0 - log_variance, axis=-1
    )


def mixture_kl_bound(probs: tf.Tensor, kl_per_position: tf.Tensor) -> tf.Tensor:
    """``sum_i a_t,i KL_i``, the convexity bound of ``KL[q(c_t) || N(0, I)]``: probs
    [B, T, N] and ``component_kl`` [B, N] -> [B, T]."""
    return tf.einsum("btn,bn->bt", probs, kl_per_position)


def sampler_kl(probs: tf.Tensor, prepared: PreparedMemory) -> tf.Tensor:
    """``KL[N(m_t, diag s_t^2) || N(0, I)]`` [B, T], the exact KL of eq. 25's sample.

    For fixed ``a_t`` and independent ``eps_t,i``, ``c_t = sum_i a_t,i (h_i + sigma_i
    eps_t,i)`` is Gaussian with mean ``m_t = sum_i a_t,i h_i`` and variance ``s_t^2 =
    sum_i a_t,i^2 sigma_i^2``, so its KL to the prior is
    ``1/2 sum_d (s_t^2 + m_t^2 - 1 - log s_t^2)``.

    Args:
      probs: ``a_t``, [B, T, N].
      prepared: ACVI's ``PreparedMemory`` (``memory``, and ``own.variance``).
    """
    mean = expected_context(probs, prepared.memory)
    variance = tf.maximum(expected_context(tf.square(probs), prepared.own.variance), _TINY_VAR)
    return 0.5 * tf.reduce_sum(variance + tf.square(mean) - 1.0 - tf.math.log(variance), axis=-1)


def returns_to_go(values: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    """``sum_{t' >= t} m_t' v_t'`` at real steps, 0 at padded ones: [B, T] -> [B, T]."""
    mask = tf.cast(mask, tf.float32)
    return tf.cumsum(values * mask, axis=1, reverse=True) * mask


def leave_one_out_baseline(
    returns: tf.Tensor, mask: tf.Tensor, group_size: Optional[int] = None
) -> tf.Tensor:
    """A control variate for the score of step t's choice from the other trajectories.

    Rows are grouped by ``group_size`` consecutive rows (the K samples of one example;
    None: the whole batch is one group). Row r's baseline at step t is the mean return per
    remaining step of the other rows of its group that reach step t, times row r's own
    number of remaining steps; 0 where no other row reaches t. It reads no draw of row
    r, so subtracting it leaves the score-function estimate unbiased.

    Args:
      returns: ``returns_to_go`` [B, T].
      mask: [B, T], 1/True at real steps.
      group_size: rows per group; B must be a multiple of it.

    Returns:
      [B, T] float32.
    """
    mask = tf.cast(mask, tf.float32)
    remaining = returns_to_go(mask, mask)
    per_step = returns / tf.maximum(remaining, 1.0)
    shape = tf.shape(returns)
    group = shape[0] if group_size is None else group_size
    grouped = tf.reshape(tf.stack([per_step, mask]), [2, -1, group, shape[1]])
    totals = tf.reduce_sum(grouped, axis=2, keepdims=True) - grouped
    others = tf.reshape(tf.math.divide_no_nan(totals[0], totals[1]), shape)
    return others * remaining


class VarianceNetwork(keras.layers.Layer):
    """The amortised variance network ``h -> log sigma^2(h)``, clipped, in float32.

    ``"mlp"`` (eq. 18): ``log sigma^2 = W2 relu(W1 h + b1) + b2`` with hidden size
    dim(h); ``"relu"`` (journal eq. 17): ``log sigma^2 = relu(W1 h + b1)``, so
    ``sigma^2 >= 1``. Weights are Glorot-uniform, biases zero. It runs once per source
    sequence, never per decoder step.

    Args:
      kind: ``"mlp"`` or ``"relu"``.
      log_var_min, log_var_max: clip range of the output.
    """

    def __init__(
        self,
        kind: str = "mlp",
        log_var_min: float = DEFAULT_LOG_VAR_MIN,
        log_var_max: float = DEFAULT_LOG_VAR_MAX,
        **kwargs: Any,
    ) -> None:
        kwargs["dtype"] = "float32"
        super().__init__(**kwargs)
        check_choice("variance_net", kind, VARIANCE_NETS)
        self.kind = kind
        self.log_var_min = float(log_var_min)
        self.log_var_max = float(log_var_max)

    def build(self, input_shape: tf.TensorShape) -> None:
        dim = int(input_shape[-1])
        self.W1 = self.add_weight(name="W1", shape=(dim, dim), initializer="glorot_uniform")
        self.b1 = self.add_weight(name="b1", shape=(dim,), initializer="zeros")
        if self.kind == "mlp":
            self.W2 = self.add_weight(name="W2", shape=(dim, dim), initializer="glorot_uniform")
            self.b2 = self.add_weight(name="b2", shape=(dim,), initializer="zeros")
        super().build(input_shape)

    def call(self, memory: tf.Tensor) -> tf.Tensor:
        """``log sigma^2`` [B, N, D] for encoder states [B, N, D]."""
        # One [B*N, D] x [D, D] product per layer. A broadcast batched product of [B, N, D]
        # and [D, D] computes the same forward, but its kernel gradient builds one [D, D]
        # matrix per batch row and sums them: 3.8x slower at the captioner's size on CPU.
        rows = tf.reshape(memory, [-1, memory.shape[-1]])
        hidden = tf.nn.relu(tf.matmul(rows, self.W1) + self.b1)
        log_var = tf.matmul(hidden, self.W2) + self.b2 if self.kind == "mlp" else hidden
        log_var = tf.reshape(log_var, tf.shape(memory))
        return tf.clip_by_value(log_var, self.log_var_min, self.log_var_max)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(kind=self.kind, log_var_min=self.log_var_min, log_var_max=self.log_var_max)
        return config


class ACVIContext(ContextLayer):
    """ACVI: the context is a latent variable with a Gaussian-mixture posterior.

    ``q(c_t) = sum_i a_t,i N(c_t | h_i, diag sigma^2(h_i))`` (eq. 19) with prior
    ``N(0, I)`` (eq. 21). The attention probabilities ``a_t`` come from any scorer;
    ``sigma^2`` comes from an amortised variance network run once per source batch.

    Args:
      variance_net: ``"mlp"`` (eq. 18: ``log sigma^2 = W2 relu(W1 h + b1) + b2``, hidden
        size dim(h)) or ``"relu"`` (journal eq. 17: ``log sigma^2 = relu(W h + b)``).
      sampling: ``"approx"`` (eq. 25: ``c_t = sum_i a_t,i (h_i + sigma_i eps_t,i)``),
        ``"gumbel"`` (journal eq. 22: the weights are a relaxed one-hot sample ``z_t``
        with logits ``log a_t``) for the whole run, or ``"mixture"``: a draw from ``q``
        itself, the component ``I_t ~ Cat(a_t)`` (Gumbel-max) and then
        ``c_t = h_I + sigma_I eps_t``. The discrete choice has no pathwise gradient;
        ``token_losses`` adds its score-function term (``choice_surrogate``).
      gumbel_fraction: with ``sampling="approx"``, use Gumbel-softmax for this last
        fraction of training steps (journal: 0.1; arXiv: 0, never).
      gumbel_temperature: temperature of the relaxed one-hot sample (journal: 0.5).
      noise: ``"collapsed"`` draws one eps [B, D] and scales it by
        ``sqrt(sum_i w_i^2 sigma_i^2)``, which has exactly the distribution of
        ``"per_component"``'s ``sum_i w_i sigma_i eps_i`` with eps [B, N, D].
      num_samples: Monte-Carlo samples K per context; hosts tile the batch K times
        (``tile_for_samples``) and average the likelihood (``average_over_samples``).
      kl: the KL term (``docs/acvi.md`` compares them; the default, ``ACVI_KL``, and
        ``kl_weight``'s, ``ACVI_KL_WEIGHT``, come from its study):

        * ``"mc"``: the single-sample estimate ``log q(c_t) - log p(c_t)`` at the drawn
          sample (the paper's words). Its mean is ``KL[q || p]`` only for samples drawn
          from ``q`` (``sampling="mixture"``). Neither eq. 25's sample nor a relaxed
          Gumbel-softmax sample (temperature > 0) is drawn from ``q``; under eq. 25 the
          estimate has no lower bound as sigma shrinks.
        * ``"bound"``: the closed-form upper bound
          ``sum_i a_t,i KL[N(h_i, sigma_i^2) || N(0, I)]`` of ``KL[q || p]`` (convexity
          of KL); not a bound of the KL of eq. 25's Gaussian.
        * ``"exact"``: the closed-form KL of the distribution eq. 25 draws from,
          ``N(sum_i a_t,i h_i, diag(sum_i a_t,i^2 sigma_i^2))``, to ``N(0, I)``: exact
          for ``sampling="approx"`` without a Gumbel phase, and refused with the other
          samplers, whose draws are not from that Gaussian.
      kl_weight: the weight hosts put on the KL term in the loss.
      decode: without ``training``: ``"mean"`` returns ``sum_i a_t,i h_i``;
        ``"sample"`` samples as in training. With ``"mean"`` the ``"mc"`` KL is the
        plug-in value at the mean; ``"bound"`` and ``"exact"`` are deterministic.
      log_var_min, log_var_max: clip range of ``log sigma^2``.
      feed: with ``sampling="mixture"``, what the decoder's next step reads in
        training: ``"sample"``, the drawn ``c_t`` (the paper's model: the choice moves
        every later step, and its score is weighted by the returns to go), or
        ``"mean"``, the expected context ``sum_i a_t,i h_i``, as in decoding (Deng et
        al.'s arrangement for variational attention): the draw reaches only the output
        layer at its step, so the decoder state is deterministic and the choice's score
        is weighted by that step's terms alone (``output_choice_losses``).
      enumerate_top: with ``feed="mean"``, score each step's this many largest-weight
        components exactly at the output layer and sample one of the others
        (``sum_and_sample``; 0: one draw from ``q``; the source length or more: the
        exact expectation over the components). Each costs one more evaluation of the
        host's output layer per step.
      seed: seed of the layer's ``tf.random.Generator`` (None: nondeterministic).
    """

    def __init__(
        self,
        variance_net: str = "mlp",
        sampling: str = "approx",
        gumbel_fraction: float = 0.0,
        gumbel_temperature: float = 0.5,
        noise: str = "collapsed",
        num_samples: int = 1,
        kl: str = ACVI_KL,
        kl_weight: float = ACVI_KL_WEIGHT,
        decode: str = "mean",
        log_var_min: float = DEFAULT_LOG_VAR_MIN,
        log_var_max: float = DEFAULT_LOG_VAR_MAX,
        feed: str = "sample",
        enumerate_top: int = 0,
        seed: Optional[int] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        check_choice("variance_net", variance_net, VARIANCE_NETS)
        check_choice("feed", feed, FEEDS)
        if int(enumerate_top) != enumerate_top or enumerate_top < 0:
            raise ValueError("enumerate_top must be an integer >= 0, got %r" % (enumerate_top,))
        if enumerate_top and feed != "mean":
            raise ValueError(
                "enumerate_top scores components at their own step's output layer, which "
                "needs feed='mean' (with feed='sample' a component moves every later step)"
            )
        if feed == "mean" and sampling != "mixture":
            raise ValueError(
                "feed='mean' moves sampling='mixture''s draw out of the decoder loop; "
                "sampling=%r draws no component" % (sampling,)
            )
        check_choice("sampling", sampling, SAMPLINGS)
        check_choice("noise", noise, NOISES)
        check_choice("kl", kl, KL_ESTIMATORS)
        check_choice("decode", decode, DECODE_MODES)
        if not 0.0 <= gumbel_fraction <= 1.0:
            raise ValueError("gumbel_fraction must be in [0, 1], got %r" % (gumbel_fraction,))
        if gumbel_temperature <= 0:
            raise ValueError("gumbel_temperature must be > 0, got %r" % (gumbel_temperature,))
        if int(num_samples) != num_samples or num_samples < 1:
            raise ValueError("num_samples must be a positive integer, got %r" % (num_samples,))
        if kl_weight < 0:
            raise ValueError("kl_weight must be >= 0, got %r" % (kl_weight,))
        if sampling != "approx" and gumbel_fraction > 0:
            raise ValueError("gumbel_fraction schedules a Gumbel phase of sampling='approx' only")
        if kl == "exact" and (sampling != "approx" or gumbel_fraction > 0):
            raise ValueError(
                "kl='exact' is the KL of eq. 25's Gaussian, and sampling=%r%s does not draw "
                "from it: use kl='mc' or 'bound'"
                % (sampling, " with a Gumbel phase" if gumbel_fraction > 0 else "")
            )
        if not log_var_min < log_var_max:
            raise ValueError(
                "log_var_min (%r) must be < log_var_max (%r)" % (log_var_min, log_var_max)
            )
        self.variance_net = variance_net
        self.sampling = sampling
        self.gumbel_fraction = float(gumbel_fraction)
        self.gumbel_temperature = float(gumbel_temperature)
        self.noise = noise
        self.num_samples = int(num_samples)
        self.kl = kl
        self.kl_weight = float(kl_weight)
        self.decode = decode
        self.log_var_min = float(log_var_min)
        self.log_var_max = float(log_var_max)
        self.feed = feed
        self.enumerate_top = int(enumerate_top)
        self.seed = seed
        self.generator = random_generator(seed)
        self.variance_network = VarianceNetwork(
            variance_net, log_var_min, log_var_max, name="variance_network"
        )

    def prepare(self, memory: tf.Tensor, memory_mask: Optional[tf.Tensor] = None) -> PreparedMemory:
        """Runs the variance network once and caches the mixture's per-component terms."""
        base = super().prepare(memory, memory_mask)
        h = base.memory
        log_var = self.variance_network(h)
        own = ACVIMemory(variance=tf.exp(log_var))
        if self.kl == "mc" or self.sampling == "mixture":  # log q(c) is evaluated
            # float64: near the clip the expanded quadratic form of log N(c | h_i, s_i^2)
            # adds and subtracts terms of about 1e6 nats, and float32 lost 1.5 of them.
            log_var64, h64 = tf.cast(log_var, tf.float64), tf.cast(h, tf.float64)
            precision = tf.exp(-log_var64)
            scaled_mean = h64 * precision
            log_norm = -0.5 * tf.reduce_sum(_LOG_2PI + log_var64 + h64 * scaled_mean, axis=-1)
            own = own._replace(precision=precision, scaled_mean=scaled_mean, log_norm=log_norm)
        if self.kl == "bound":
            own = own._replace(component_kl=component_kl(h, log_var))
        return base._replace(own=own)

    def statistics(self, prepared: Optional[PreparedMemory]) -> Dict[str, tf.Tensor]:
        """The mean ``log sigma^2`` and the mean ``sigma`` over real source positions
        and dimensions (none without a prepared memory)."""
        if prepared is None:
            return {}
        mask, variance = prepared.mask[..., tf.newaxis], prepared.own.variance
        count = tf.reduce_sum(mask) * tf.cast(tf.shape(variance)[-1], tf.float32)
        return {
            "sigma/mean_log_variance": tf.reduce_sum(tf.math.log(variance) * mask) / count,
            "sigma/mean_sigma": tf.reduce_sum(tf.sqrt(variance) * mask) / count,
        }

    def gumbel_active(self, step: Union[tf.Tensor, int], total_steps: int) -> tf.Tensor:
        """True in the last ``gumbel_fraction`` of ``total_steps`` (always for "gumbel").

        With fraction f, the last ``round(f * total_steps)`` steps, 0-based steps
        ``total_steps - round(f * total_steps)`` onwards, use Gumbel-softmax.
        """
        if self.sampling == "gumbel":
            return tf.constant(True)
        num_gumbel_steps = int(round(self.gumbel_fraction * total_steps))
        if num_gumbel_steps == 0:
            return tf.constant(False)
        return tf.cast(step, tf.int64) >= total_steps - num_gumbel_steps

    def normal(self, shape: tf.Tensor, seed: Optional[tf.Tensor]) -> tf.Tensor:
        """Standard normal noise of ``shape``, where every draw's noise comes from: the
        layer's generator, or stateless from ``seed`` ([2] integers) where one is given."""
        if seed is None:
            return self.generator.normal(shape)
        return tf.random.stateless_normal(shape, seed)

    def _uniform(self, shape, seed):
        # Open interval (0, 1): the Gumbel transform -log(-log u) needs both logs finite.
        tiny = float(np.finfo(np.float32).tiny)
        if seed is None:
            return self.generator.uniform(shape, minval=tiny, maxval=1.0)
        return tf.random.stateless_uniform(shape, seed, minval=tiny, maxval=1.0)

    def _perturbed_logits(self, probs, seed, uniform):
        """``log a_t + g``, g standard Gumbel noise (``-log(-log u)``), [B, T, N]."""
        if uniform is None:
            uniform = self._uniform(tf.shape(probs), seed)
        return tf.math.log(tf.maximum(probs, _TINY_PROB)) - tf.math.log(-tf.math.log(uniform))

    def gumbel_weights(
        self,
        probs: tf.Tensor,
        mask: tf.Tensor,
        seed: Optional[tf.Tensor] = None,
        uniform: Optional[tf.Tensor] = None,
    ) -> tf.Tensor:
        """Relaxed one-hot sample ``z_t`` with logits ``log a_t`` over real positions.

        Args:
          probs: ``a_t``, [B, T, N].
          mask: [B, N] padding mask.
          seed: optional stateless seed.
          uniform: optional U(0, 1) noise [B, T, N] to use instead of drawing it.

        Returns:
          [B, T, N] weights on the simplex, zero at padded positions.
        """
        logits = self._perturbed_logits(probs, seed, uniform)
        return masked_softmax(
            logits / self.gumbel_temperature, mask[:, tf.newaxis], mask_mode="neg_inf"
        )

    def component_choice(
        self,
        probs: tf.Tensor,
        mask: tf.Tensor,
        seed: Optional[tf.Tensor] = None,
        uniform: Optional[tf.Tensor] = None,
    ) -> tf.Tensor:
        """One-hot ``I_t ~ Cat(a_t)`` over real positions, by Gumbel-max.

        Args and noise as ``gumbel_weights``; the same uniform noise gives the same
        choice, so a loop can rebuild it from the stacked attention.

        Returns:
          [B, T, N] one-hot float32 weights (no gradient reaches ``probs``).
        """
        logits = self._perturbed_logits(probs, seed, uniform)
        logits = tf.where(tf.cast(mask[:, tf.newaxis], tf.bool), logits, -np.inf)
        return tf.one_hot(tf.argmax(logits, axis=-1), tf.shape(probs)[-1])

    def _mixture_weights(self, probs, mask, use_gumbel, seed=None, uniform=None):
        """The sample's mixture weights: ``a_t``, ``z_t`` where ``use_gumbel``, or the
        one-hot component choice of ``sampling="mixture"``."""
        if self.sampling == "mixture":
            return self.component_choice(probs, mask, seed, uniform)
        if use_gumbel is None:
            use_gumbel = self.sampling == "gumbel"
        if isinstance(use_gumbel, bool):
            return self.gumbel_weights(probs, mask, seed, uniform) if use_gumbel else probs
        return tf.cond(
            use_gumbel, lambda: self.gumbel_weights(probs, mask, seed, uniform), lambda: probs
        )

    def defer_contractions(
        self,
        prepared: PreparedMemory,
        steps: tf.Tensor,
        training: bool = False,
        use_gumbel: Optional[Union[bool, tf.Tensor]] = None,
    ) -> DeferredContractions:
        """Defers the mean's and, for collapsed noise, the noise scale's contraction.

        When the Gumbel path may be on, or the component choice of
        ``sampling="mixture"`` is made, its uniform noise for every step is drawn here and
        read by the steps, so that ``bind`` rebuilds the weights from the stacked
        attention.
        """
        if not self._samples_in_loop(training):
            return super().defer_contractions(prepared, steps)
        sources = ["memory"] + (["variance"] if self.noise == "collapsed" else [])
        if use_gumbel is None:
            use_gumbel = self.sampling == "gumbel"
        static = tf.get_static_value(use_gumbel)
        extra = {}
        if self.sampling == "mixture" or static is None or bool(static):
            shape = tf.shape(prepared.mask)
            extra["gumbel_uniform"] = self._uniform(tf.stack([steps, shape[0], shape[1]]), None)

        def weights_fn(attention):
            weights = attention
            if extra:
                weights = self._mixture_weights(
                    attention,
                    prepared.mask,
                    use_gumbel,
                    uniform=tf.transpose(extra["gumbel_uniform"], [1, 0, 2]),
                )
            return {"memory": weights, "variance": tf.square(weights)}

        return DeferredContractions(prepared, steps, sources, weights_fn, extra)

    def sample(
        self,
        probs: tf.Tensor,
        prepared: PreparedMemory,
        use_gumbel: Optional[Union[bool, tf.Tensor]] = None,
        seed: Optional[tf.Tensor] = None,
    ) -> tf.Tensor:
        """Draws ``c_t`` [B, T, D] by the reparameterisation trick (eq. 24-25)."""
        noise_seed = weight_seed = None
        if seed is not None:
            noise_seed, weight_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
        uniform = (prepared.step_inputs or {}).get("gumbel_uniform")
        if uniform is not None:
            uniform = tf.expand_dims(uniform, 1)
        weights = self._mixture_weights(probs, prepared.mask, use_gumbel, weight_seed, uniform)
        mean = contract(weights, prepared, "memory")
        batch, steps = tf.shape(probs)[0], tf.shape(probs)[1]
        dim = tf.shape(prepared.memory)[-1]
        if self.noise == "collapsed":
            # sum_i w_i sigma_i eps_i  ~  sqrt(sum_i w_i^2 sigma_i^2) eps, eps ~ N(0, I).
            std = tf.sqrt(tf.maximum(contract(tf.square(weights), prepared, "variance"), _TINY_VAR))
            return mean + std * self.normal(tf.stack([batch, steps, dim]), noise_seed)
        eps = self.normal(tf.stack([batch, steps, tf.shape(probs)[2], dim]), noise_seed)
        noise = tf.expand_dims(tf.sqrt(prepared.own.variance), 1) * eps
        return mean + tf.squeeze(tf.matmul(weights[..., tf.newaxis, :], noise), -2)

    def choice_surrogate(
        self, contexts: tf.Tensor, probs: tf.Tensor, prepared: PreparedMemory
    ) -> tf.Tensor:
        """Zero in value; its gradient is ``grad log q(c_t)`` through ``a_t`` alone, [B, T].

        For ``c_t ~ q`` the gradient of ``E_q[f(c_t)]`` is the pathwise gradient of
        ``f(h_I + sigma_I eps)`` at the drawn component (the components' parameters)
        plus ``E_q[f(c_t) grad_a log q(c_t)]`` (the mixture weights). The score
        ``grad_a log q(c_t) = sum_i grad a_t,i N(c_t | h_i, sigma_i^2) / q(c_t)`` is the
        expectation of ``grad log a_t,I`` given ``c_t``, so it has no more variance.

        Args:
          contexts: the drawn ``c_t`` [B, T, D].
          probs: ``a_t`` [B, T, N].
          prepared: a ``PreparedMemory`` with the mixture's density terms.
        """
        own = prepared.own
        fixed = prepared._replace(
            own=own._replace(
                log_norm=tf.stop_gradient(own.log_norm),
                precision=tf.stop_gradient(own.precision),
                scaled_mean=tf.stop_gradient(own.scaled_mean),
            )
        )
        log_q = self.log_posterior(tf.stop_gradient(tf.cast(contexts, tf.float32)), probs, fixed)
        return log_q - tf.stop_gradient(log_q)

    def token_losses(
        self,
        gold: GoldTarget,
        attention_probs: tf.Tensor,
        kl: tf.Tensor,
        prepared: PreparedMemory,
        training: bool = False,
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """The cross-entropy and KL, with the choice's score-function terms in training
        with ``sampling="mixture"``.

        The host minimises ``sum_t (-log p(y_t) + w KL_t)`` (normalised and weighted its
        own way, linearly per step). Step t's choice changes every term from t on, so
        its score (``choice_surrogate``) is weighted by the returns to go of both terms,
        less ``leave_one_out_baseline``'s: ``-(R^y_t - b^y_t) score_t`` joins the
        cross-entropy and ``(R^KL_t - b^KL_t) score_t`` the KL, where the host's weight
        and warm-up multiply it. Both are zero in value, so the loss reads as before.
        Arguments and returns as ``ContextLayer.token_losses``.
        """
        if training and self.feed == "mean":
            return self.output_choice_losses(gold, attention_probs, kl, prepared)
        token_nll, kl = super().token_losses(gold, attention_probs, kl, prepared, training)
        if not (training and self.sampling == "mixture"):
            return token_nll, kl
        score = self.choice_surrogate(gold.contexts, attention_probs, prepared)
        group = self.num_samples if self.num_samples > 1 else None

        def advantage(values):
            returns = returns_to_go(values, gold.mask)
            return tf.stop_gradient(returns - leave_one_out_baseline(returns, gold.mask, group))

        return token_nll - advantage(-token_nll) * score, kl + advantage(kl) * score

    def output_choice_losses(
        self,
        gold: GoldTarget,
        attention_probs: tf.Tensor,
        kl: tf.Tensor,
        prepared: PreparedMemory,
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """The cross-entropy and KL of ``feed="mean"`` in training, [B, T] each.

        The loop fed the expected context, so the state ``s_t`` does not depend on any
        draw and the ELBO is a sum of per-step terms ``E_q[log p(y_t | s_t, c_t)] - KL_t``.
        Each step draws ``c_t ~ q`` here and scores it with the host's output layer; the
        choice's score (``choice_surrogate``) is weighted by that step's reward alone,
        ``log p(y_t | c_t) - log p(y_t | sum_i a_t,i h_i)``, the prediction at the
        expected context (the loop's) as the baseline: it reads no draw. ``kl="mc"``
        is evaluated at the draw, with the step's ``mixture_kl_bound`` as its baseline;
        ``"bound"`` does not depend on the draw and keeps its pathwise gradient. The
        values are the sampled ``-log p(y_t | c_t)`` and KL.

        Args:
          gold: the gold target as the host's output layer scores it.
          attention_probs: ``a_t`` [B, T, N].
          kl: the loop's KL [B, T] (``kl_steps``; ``"mc"``'s is replaced).
          prepared: the mixture's ``PreparedMemory``.
        """
        probs = tf.cast(attention_probs, tf.float32)
        if self.enumerate_top:
            return self.sum_and_sample(gold, probs, kl, prepared)
        contexts = self.sample(probs, prepared)
        log_likelihood = gold.log_likelihood(tf.cast(contexts, self.compute_dtype))
        score = self.choice_surrogate(contexts, probs, prepared)
        reward = tf.stop_gradient(log_likelihood - gold.soft_log_likelihood)
        token_nll = -log_likelihood - reward * score
        if self.kl == "mc":
            sampled = self.kl_steps(contexts, probs, prepared)
            baseline = self._kl_bound(probs, prepared)
            kl = sampled + tf.stop_gradient(sampled - baseline) * score
        return token_nll, kl

    def sum_and_sample(
        self, gold: GoldTarget, probs: tf.Tensor, kl: tf.Tensor, prepared: PreparedMemory
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """``output_choice_losses`` with ``enumerate_top`` = k: Liu et al.'s (2019)
        Rao-Blackwellised "sum and sample" estimate of ``E_q[f(c_t)]`` per step.

        With ``C`` the k components of largest ``a_t,i`` and ``r = 1 - sum_{i in C}
        a_t,i`` the weight of the others, ``E_q[f] = sum_{i in C} a_t,i E[f(h_i + sigma_i
        eps)] + r E_{j ~ a_t / r, j not in C}[E[f(h_j + sigma_j eps)]]``. Each ``i`` in
        ``C`` gets one reparameterised draw, and one ``j`` is drawn from the others; the
        weights get their gradient directly from the sum, and through ``r`` and the score
        term ``r (f(c_j) - b_t) grad log(a_t,j / r)`` from the sample (``b_t`` reads no
        draw: the prediction at the expected context for the likelihood, the bound for
        ``kl="mc"``). Unbiased for any k; the sample's share of the variance shrinks with
        ``r^2``, and at k >= the source length it is exact. ``kl="bound"`` keeps the
        loop's closed form ``kl``; ``"mc"``'s is estimated so.

        Returns:
          ``(token_nll, kl)`` [B, T], the negated likelihood's estimate and the KL's.
        """
        k = self.enumerate_top
        memory, variance = prepared.memory, prepared.own.variance
        # k padding positions of weight 0, so that top_k finds k whatever the source length
        padded = tf.pad(probs, [[0, 0], [0, 0], [0, k]])
        memory = tf.pad(memory, [[0, 0], [0, k], [0, 0]])
        variance = tf.pad(variance, [[0, 0], [0, k], [0, 0]], constant_values=1.0)
        top, index = tf.math.top_k(padded, k)  # [B, T, k]
        rest = tf.maximum(1.0 - tf.reduce_sum(top, -1), 0.0)
        others = padded * (1.0 - tf.reduce_sum(tf.one_hot(index, tf.shape(padded)[-1]), -2))
        logits = self._perturbed_logits(others, None, None)
        drawn = tf.argmax(tf.where(others > 0, logits, -np.inf), axis=-1, output_type=tf.int32)
        log_ratio = tf.math.log(tf.maximum(tf.gather(padded, drawn, batch_dims=2), _TINY_PROB))
        log_ratio -= tf.math.log(tf.maximum(rest, _TINY_PROB))
        score = log_ratio - tf.stop_gradient(log_ratio)

        def component(chosen):  # h_i + sigma_i eps [B, T, D] for i = chosen [B, T]
            mean = tf.gather(memory, chosen, batch_dims=1)
            scale = tf.sqrt(tf.gather(variance, chosen, batch_dims=1))
            return mean + scale * self.normal(tf.shape(mean), None)

        contexts = [component(chosen) for chosen in tf.unstack(index, k, axis=-1) + [drawn]]

        def estimate(f, baseline):
            values = [f(c) for c in contexts]
            exact = tf.add_n([top[..., m] * values[m] for m in range(k)])
            sampled = values[-1]
            advantage = tf.stop_gradient(sampled - baseline)
            return exact + rest * sampled + rest * advantage * score

        def log_likelihood(c):
            return gold.log_likelihood(tf.cast(c, self.compute_dtype))

        token_nll = -estimate(log_likelihood, gold.soft_log_likelihood)
        if self.kl != "mc":
            return token_nll, kl

        def kl_at(c):
            return self.kl_steps(c, probs, prepared)

        return token_nll, estimate(kl_at, self._kl_bound(probs, prepared))

    def _kl_bound(self, probs: tf.Tensor, prepared: PreparedMemory) -> tf.Tensor:
        """``mixture_kl_bound`` [B, T], from the prepared per-position KL where
        ``kl="bound"`` made it."""
        terms = prepared.own.component_kl
        if terms is None:
            terms = component_kl(prepared.memory, tf.math.log(prepared.own.variance))
        return mixture_kl_bound(probs, terms)

    def log_posterior(
        self, context: tf.Tensor, probs: tf.Tensor, prepared: PreparedMemory
    ) -> tf.Tensor:
        """``log q(c_t) = logsumexp_i [log a_t,i + log N(c_t | h_i, sigma_i^2)]``, [B, T].

        The sum runs over real (unmasked) positions only; the density is evaluated in
        float64 and returned in float32.
        """
        context = tf.cast(context, tf.float64)
        log_components = (
            prepared.own.log_norm[:, tf.newaxis]
            - 0.5 * tf.matmul(tf.square(context), prepared.own.precision, transpose_b=True)
            + tf.matmul(context, prepared.own.scaled_mean, transpose_b=True)
        )
        log_weights = tf.math.log(tf.maximum(tf.cast(probs, tf.float64), _TINY_PROB))
        real = tf.cast(prepared.mask[:, tf.newaxis], tf.bool)
        logits = tf.where(real, log_weights + log_components, _MASKED_LOGIT)
        return tf.cast(tf.reduce_logsumexp(logits, axis=-1), tf.float32)

    def report_posterior(
        self, attention_probs: tf.Tensor, prepared: PreparedMemory
    ) -> Dict[str, tf.Tensor]:
        """``sigma`` (``position_scale``) and the KL per step that is deterministic given
        ``a_t``: ``kl="exact"``'s ``sampler_kl``, otherwise the bound
        (``mixture_kl_bound``), which also stands in for ``kl="mc"``'s sampled estimate.
        Arguments and returns as ``ContextLayer.report_posterior``."""
        probs = tf.cast(attention_probs, tf.float32)
        kl = sampler_kl(probs, prepared) if self.kl == "exact" else self._kl_bound(probs, prepared)
        return {"sigma": position_scale(prepared.own.variance), "kl": kl}

    def report_labels(self) -> Dict[str, str]:
        """Names the scale and which KL ``report_posterior`` gives for ``kl``."""
        kl = {
            "exact": "KL per step: exact, KL(N(sum_i a_t,i h_i, sum_i a_t,i^2 sigma_i^2) || "
            "N(0, I)), eq. 25's Gaussian (--acvi_kl=exact)",
            "bound": "KL per step: bound, sum_i a_t,i KL(N(h_i, sigma_i^2) || N(0, I)) "
            "(--acvi_kl=bound)",
            "mc": "KL per step: bound, sum_i a_t,i KL(N(h_i, sigma_i^2) || N(0, I)), an upper "
            "bound of KL(q || N(0, I)); --acvi_kl=mc's single-sample estimate has no "
            "deterministic value and no closed form",
        }[self.kl]
        sigma = "Posterior scale per source position: sqrt(mean_d sigma_i,d^2)"
        return {"sigma": sigma, "kl": kl}

    def kl_steps(self, context: tf.Tensor, probs: tf.Tensor, prepared: PreparedMemory) -> tf.Tensor:
        """Per-step KL term [B, T] for the sampled ``context`` [B, T, D]."""
        if self.kl == "bound":
            return mixture_kl_bound(probs, prepared.own.component_kl)
        if self.kl == "exact":
            return sampler_kl(probs, prepared)
        log_prior = -0.5 * tf.reduce_sum(_LOG_2PI + tf.square(context), axis=-1)
        return self.log_posterior(context, probs, prepared) - log_prior

    def draw_steps(
        self,
        probs: tf.Tensor,
        prepared: PreparedMemory,
        training: bool,
        use_gumbel: Optional[Union[bool, tf.Tensor]],
        seed: Optional[tf.Tensor],
    ) -> tf.Tensor:
        """Context [B, T, D] for probs [B, T, N]: a sample, or the mean when decoding
        (and in training with ``feed="mean"``)."""
        if self._samples_in_loop(training):
            return self.sample(probs, prepared, use_gumbel, seed)
        return contract(probs, prepared, "memory")

    def _samples_in_loop(self, training: bool) -> bool:
        """Whether the decoder loop reads a drawn context (else the expected one)."""
        if training:
            return self.feed == "sample"
        return self.decode == "sample"

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            variance_net=self.variance_net,
            sampling=self.sampling,
            gumbel_fraction=self.gumbel_fraction,
            gumbel_temperature=self.gumbel_temperature,
            noise=self.noise,
            num_samples=self.num_samples,
            kl=self.kl,
            kl_weight=self.kl_weight,
            decode=self.decode,
            log_var_min=self.log_var_min,
            log_var_max=self.log_var_max,
            feed=self.feed,
            enumerate_top=self.enumerate_top,
            seed=self.seed,
        )
        return config


def define_flags(fv: flags.FlagValues) -> None:
    """Defines the ``--acvi_*`` flags on ``fv``."""
    _define_variance_flags(fv)
    _define_sampling_flags(fv)
    _define_gumbel_and_noise_flags(fv)
    _define_samples_and_kl_flags(fv)


def _define_variance_flags(fv: flags.FlagValues) -> None:
    """Defines the variance network and the clip of its log variance."""
    flags.DEFINE_enum(
        "acvi_variance_net",
        "mlp",
        list(VARIANCE_NETS),
        "ACVI variance network: 'mlp' log s^2 = W2 relu(W1 h + b1) + b2 (arXiv eq. 18) "
        "or 'relu' log s^2 = relu(W h + b) (journal eq. 17).",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "acvi_log_var_min",
        DEFAULT_LOG_VAR_MIN,
        "Lower clip of log sigma^2 (keeps the KL and its gradient finite).",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "acvi_log_var_max",
        DEFAULT_LOG_VAR_MAX,
        "Upper clip of log sigma^2.",
        flag_values=fv,
    )


def _define_sampling_flags(fv: flags.FlagValues) -> None:
    """Defines how a context is drawn in training: the sampler and what the next step
    reads."""
    flags.DEFINE_enum(
        "acvi_sampling",
        "approx",
        list(SAMPLINGS),
        "ACVI sampling: 'approx' weights the component samples by the attention "
        "probabilities (eq. 25); 'gumbel' by a Gumbel-softmax sample (journal eq. 22) "
        "for the whole run; 'mixture' draws from the posterior q itself (a component "
        "from the attention, then its Gaussian), with a score-function gradient for "
        "the choice: with --acvi_kl=mc or bound at --kl_weight=1 the loss is a bound "
        "on log p(y); with --acvi_num_samples >= 2 each sample's baseline is the "
        "example's other samples, which learns far better (docs/acvi.md).",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "acvi_feed",
        "sample",
        list(FEEDS),
        "With --acvi_sampling=mixture, what the decoder's next step reads in training: "
        "'sample' the drawn context (the paper's model; the choice's score-function "
        "gradient is weighted by the returns to go), 'mean' the expected context, as in "
        "decoding, so that the draw reaches only its step's output layer and its gradient "
        "is weighted by that step's reward alone (far lower variance; still a bound on "
        "log p(y) of that model; docs/acvi.md).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "acvi_enumerate_top",
        0,
        "With --acvi_feed=mean: score each step's this many largest-weight components "
        "exactly at the output layer and draw one of the others (sum and sample); 0 draws "
        "one component, the source length or more takes the exact expectation. Each costs "
        "one more output layer per decoder step.",
        lower_bound=0,
        flag_values=fv,
    )


def _define_gumbel_and_noise_flags(fv: flags.FlagValues) -> None:
    """Defines the Gumbel-softmax phase and its temperature, and how the noise is drawn."""
    flags.DEFINE_float(
        "acvi_gumbel_fraction",
        0.0,
        "With --acvi_sampling=approx, switch to Gumbel-softmax for this last fraction of "
        "training steps (journal version: 0.1; arXiv version: 0).",
        lower_bound=0.0,
        upper_bound=1.0,
        flag_values=fv,
    )
    flags.DEFINE_float(
        "acvi_gumbel_temperature",
        0.5,
        "Temperature of the Gumbel-softmax relaxation (journal: 0.5); must be > 0.",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "acvi_noise",
        "collapsed",
        list(NOISES),
        "'collapsed' draws one eps per context (same distribution, O(B*D) numbers); "
        "'per_component' draws one eps per source position, as eq. 24 is written.",
        flag_values=fv,
    )


def _define_samples_and_kl_flags(fv: flags.FlagValues) -> None:
    """Defines the samples per context, the KL estimator and the decode-time context."""
    flags.DEFINE_integer(
        "acvi_num_samples",
        1,
        "Monte-Carlo samples K of every context; the batch is tiled K times.",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "acvi_kl",
        ACVI_KL,
        list(KL_ESTIMATORS),
        "ACVI's KL term: 'mc' log q(c) - log p(c) at the sample (the paper's words; "
        "an unbiased estimate of KL[q || p] with --acvi_sampling=mixture only), 'bound' "
        "the closed-form upper bound sum_i a_i KL[N(h_i, s_i^2) || N(0, I)] of "
        "KL[q || p], 'exact' the closed-form KL of the Gaussian eq. 25 samples from, "
        "N(sum_i a_i h_i, sum_i a_i^2 s_i^2), to N(0, I) (--acvi_sampling=approx "
        "without a Gumbel phase only).",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "acvi_decode",
        "mean",
        list(DECODE_MODES),
        "Context at decode time: 'mean' sum_i a_i h_i (deterministic beam search) or "
        "'sample' as in training.",
        flag_values=fv,
    )


def check_flags(fv: flags.FlagValues) -> None:
    """Registers the checks of the ``--acvi_*`` flags on ``fv``: a positive temperature,
    an ordered clip, and no sampling settings that contradict each other or
    ``--kl_free_bits`` (a shared flag)."""
    flags.register_validator(
        "acvi_gumbel_temperature",
        lambda t: t > 0,
        message="--acvi_gumbel_temperature must be > 0.",
        flag_values=fv,
    )
    flags.register_multi_flags_validator(
        ["acvi_log_var_min", "acvi_log_var_max"],
        lambda d: d["acvi_log_var_min"] < d["acvi_log_var_max"],
        message="--acvi_log_var_min must be smaller than --acvi_log_var_max.",
        flag_values=fv,
    )
    flags.register_multi_flags_validator(
        ["acvi_sampling", "acvi_gumbel_fraction"],
        lambda d: d["acvi_sampling"] == "approx" or d["acvi_gumbel_fraction"] == 0.0,
        message="--acvi_gumbel_fraction schedules Gumbel-softmax at the end of an "
        "--acvi_sampling=approx run; with --acvi_sampling=gumbel every step "
        "already uses it, and --acvi_sampling=mixture never does, so leave the "
        "fraction at 0.",
        flag_values=fv,
    )
    flags.register_multi_flags_validator(
        ["acvi_kl", "acvi_sampling", "acvi_gumbel_fraction"],
        lambda d: (
            d["acvi_kl"] != "exact"
            or (d["acvi_sampling"] == "approx" and d["acvi_gumbel_fraction"] == 0.0)
        ),
        message="--acvi_kl=exact is the KL of eq. 25's Gaussian, and Gumbel-softmax or "
        "mixture sampling does not draw from it: use --acvi_kl=mc or bound, or "
        "--acvi_sampling=approx without --acvi_gumbel_fraction.",
        flag_values=fv,
    )
    flags.register_multi_flags_validator(
        ["acvi_sampling", "acvi_feed"],
        lambda d: d["acvi_sampling"] == "mixture" or d["acvi_feed"] == "sample",
        message="--acvi_feed=mean moves --acvi_sampling=mixture's draw out of the decoder "
        "loop; the other samplers draw no component: add --acvi_sampling=mixture.",
        flag_values=fv,
    )
    flags.register_multi_flags_validator(
        ["acvi_feed", "acvi_enumerate_top"],
        lambda d: d["acvi_feed"] == "mean" or not d["acvi_enumerate_top"],
        message="--acvi_enumerate_top scores components at their own step's output layer, "
        "where with --acvi_feed=sample a component moves every later step: add "
        "--acvi_feed=mean.",
        flag_values=fv,
    )
    flags.register_multi_flags_validator(
        ["acvi_sampling", "kl_free_bits"],
        lambda d: d["acvi_sampling"] != "mixture" or not d["kl_free_bits"],
        message="--acvi_sampling=mixture weights its choice's gradient by the plain KL, "
        "so it cannot train with --kl_free_bits; leave it at 0.",
        flag_values=fv,
    )


def options(config: Any) -> Dict[str, Any]:
    """The layer's arguments from a command's ``acvi_tf.config.Config``; warns of an
    ``--acvi_kl=mc`` that does not estimate the KL."""
    if config.acvi_kl == "mc" and config.acvi_sampling != "mixture":
        logging.warning(
            "--acvi_kl=mc evaluates log q(c) - log p(c) at a sample that is not drawn "
            "from q (--acvi_sampling=%s), so it does not estimate KL[q || p]; under eq. "
            "25 it has no lower bound as sigma shrinks. --acvi_sampling=mixture draws "
            "from q (docs/acvi.md).",
            config.acvi_sampling,
        )
    return dict(
        variance_net=config.acvi_variance_net,
        sampling=config.acvi_sampling,
        gumbel_fraction=config.acvi_gumbel_fraction,
        gumbel_temperature=config.acvi_gumbel_temperature,
        noise=config.acvi_noise,
        num_samples=config.acvi_num_samples,
        kl=config.acvi_kl,
        decode=config.acvi_decode,
        log_var_min=config.acvi_log_var_min,
        log_var_max=config.acvi_log_var_max,
        feed=config.acvi_feed,
        enumerate_top=config.acvi_enumerate_top,
        **sampling_options(config),
    )

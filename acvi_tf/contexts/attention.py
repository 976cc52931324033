"""Attention scorers with padding masks.

Every scorer is a small Keras layer with two methods:

* ``prepare(memory)`` runs once per source batch and returns the keys the scorer
  compares against (for the additive scorer the projection ``W_h h_i``, which See et al.
  compute once as a 1x1 convolution; for Luong ``general`` the projection ``W h_i``).
* ``call(query, keys, memory_mask, ...)`` returns the attention probabilities ``a_t`` for one
  decoder step (``query`` of shape [B, Q] -> [B, N]) or for many steps at once
  (``query`` of shape [B, T, Q] -> [B, T, N]).

Scores are turned into probabilities in float32 whatever the layer's compute dtype, so
the scorers work unchanged under a ``mixed_float16`` policy.
"""

import math
from typing import Any, Callable, Optional, Sequence, Union

import tensorflow as tf

from acvi_tf.compat import keras

MASK_MODES = ("neg_inf", "renormalize")
MULTIPLICATIVE_MODES = ("general", "dot")

# Added to the scores of masked positions in "neg_inf" mode: exp(-1e9) is exactly 0 in
# float32, and unlike -inf it cannot produce NaN for a row whose positions are all masked.
_MASKED_SCORE = -1e9


def masked_softmax(scores: tf.Tensor, mask: tf.Tensor, mask_mode: str = "neg_inf") -> tf.Tensor:
    """Softmax over the last axis that gives padded positions zero probability.

    Args:
      scores: float tensor [..., N] of attention energies.
      mask: tensor broadcastable to ``scores``, 1/True for real positions, 0/False for
        padding.
      mask_mode: ``"neg_inf"`` pushes masked scores to -1e9 before the softmax;
        ``"renormalize"`` is See et al.'s order: softmax over all positions, multiply
        by the mask, divide by the new sum. The two agree mathematically; the second is
        what the original pointer-generator computes.

    Returns:
      float32 tensor [..., N]. Each row sums to 1 over its real positions; a row with no
      real position is all zeros.
    """
    if mask_mode not in MASK_MODES:
        raise ValueError("mask_mode must be one of %s, got %r" % (MASK_MODES, mask_mode))
    scores = tf.cast(scores, tf.float32)
    mask = tf.cast(mask, tf.float32)
    if mask_mode == "neg_inf":
        probs = tf.nn.softmax(scores + (1.0 - mask) * _MASKED_SCORE, axis=-1)
        return probs * mask
    probs = tf.nn.softmax(scores, axis=-1) * mask
    return tf.math.divide_no_nan(probs, tf.reduce_sum(probs, axis=-1, keepdims=True))


@tf.custom_gradient
def coverage_feature(coverage: tf.Tensor, w_c: tf.Tensor) -> tf.Tensor:
    """See's coverage term ``w_c cov_i``: [..., N] and [1, U] -> [..., N, U].

    The value is a broadcast product, exactly what a dense layer on a size-1 input axis
    computes (one product per element, nothing summed), without that layer's K = 1
    matrix product; the gradients are matrix products, ``dF w_c^T`` for the coverage
    and ``cov^T dF`` for ``w_c``, rather than the broadcast product's multiply-and-reduce
    over a temporary [..., N, U] tensor (BENCHMARKS.md: ``bench/train_step.py``'s
    ``ablation: sa dense coverage`` and ``bench/decode_speed.py --coverage``).
    """
    units = tf.shape(w_c)[-1]

    def grad(upstream):
        rows = tf.reshape(upstream, [-1, units])
        return (
            tf.reshape(tf.matmul(rows, w_c, transpose_b=True), tf.shape(coverage)),
            tf.matmul(tf.reshape(coverage, [1, -1]), rows),
        )

    return coverage[..., tf.newaxis] * w_c[0], grad


def check_choice(name: str, value: object, choices: Sequence[object]) -> None:
    """Raises ``ValueError`` naming ``name`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError("%s must be one of %s, got %r" % (name, choices, value))


class _Scorer(keras.layers.Layer):
    """Shared plumbing: one-step or many-step queries, then the masked softmax.

    Subclasses define ``score(query, keys, coverage)``, the energies [B, T, N] for
    queries [B, T, Q], and may override ``prepare`` and ``score_mask``; one that takes
    the coverage feature sets ``use_coverage``.
    """

    use_coverage = False

    def __init__(self, mask_mode: str = "neg_inf", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        check_choice("mask_mode", mask_mode, MASK_MODES)
        self.mask_mode = mask_mode

    def prepare(self, memory: tf.Tensor) -> tf.Tensor:
        """Returns the keys for ``memory`` [B, N, D]; computed once per source batch."""
        return memory

    def call(
        self,
        query: tf.Tensor,
        keys: tf.Tensor,
        memory_mask: Optional[tf.Tensor] = None,
        coverage: Optional[tf.Tensor] = None,
        normalizer: Optional[Callable[[tf.Tensor, tf.Tensor], tf.Tensor]] = None,
    ) -> tf.Tensor:
        """Attention probabilities.

        Args:
          query: [B, Q] for one decoder step or [B, T, Q] for T steps.
          keys: the output of ``prepare`` for this source batch.
          memory_mask: [B, N] padding mask of the source (1 = real token); None means
            no padding.
          coverage: [B, N] or [B, T, N], the sum of earlier steps' attention
            (additive scorer with ``use_coverage`` only).
          normalizer: ``(scores, mask) -> weights`` to use instead of the masked softmax
            (a context layer's ``normalizer``, e.g. structured attention's CRF
            marginals); None for the softmax.

        Returns:
          float32 probabilities, [B, N] or [B, T, N] to match ``query``.
        """
        one_step = len(query.shape) == 2
        if one_step:
            query = query[:, tf.newaxis, :]
            if coverage is not None:
                coverage = coverage[:, tf.newaxis]
        if coverage is not None and not self.use_coverage:
            raise ValueError("%s got `coverage` but has no coverage feature" % type(self).__name__)
        scores = self.score(query, keys, coverage)
        if memory_mask is None:
            memory_mask = tf.ones(tf.shape(keys)[:2], tf.bool)
        mask = self.score_mask(memory_mask, scores)
        if normalizer is None:
            probs = masked_softmax(scores, mask, self.mask_mode)
        else:
            probs = normalizer(scores, tf.broadcast_to(tf.cast(mask, tf.float32), tf.shape(scores)))
        return probs[:, 0, :] if one_step else probs

    def score_mask(self, memory_mask: tf.Tensor, scores: tf.Tensor) -> tf.Tensor:
        """The mask applied to ``scores`` [B, T, N]: the padding mask by default."""
        del scores
        return tf.cast(memory_mask, tf.bool)[:, tf.newaxis, :]

    def get_config(self) -> dict:
        config = super().get_config()
        config["mask_mode"] = self.mask_mode
        return config


class AdditiveScorer(_Scorer):
    """Bahdanau attention: ``e_t,i = v^T tanh(W_h h_i + W_s s_t + w_c cov_t,i + b)``.

    ``W_h`` has no bias (See et al.'s 1x1 convolution); ``b`` is the bias of ``W_s``
    (See's ``b_attn``). With ``use_coverage`` the layer owns ``w_c`` and the coverage
    vector (the sum of earlier steps' attention, [B, N]) enters each score through it;
    ``coverage=None`` leaves the term out (See's first step, or a curriculum phase with
    coverage off, where ``w_c`` is unused rather than multiplied by zeros). All weights
    take Keras's Glorot-uniform default and zero bias, which is also TF1's
    ``get_variable`` default that the original code relies on.

    Under a ``mixed_bfloat16`` policy on a machine without a GPU the features
    ``tanh(...)`` and the energies are computed in float32 (the products ``W_h h_i`` and
    ``W_s s_t`` stay bfloat16): CPUs have no bfloat16 element-wise arithmetic, and there
    the adds, ``tanh`` and its gradient over the [B, T, N, units] features took 3-7x
    their float32 time (``bench/train_step.py --profile_steps``).

    Args:
      units: size of the attention space (See: 2 * hidden_dim = 512).
      use_coverage: add the coverage feature ``w_c cov_i``.
      mask_mode: see ``masked_softmax``.
    """

    def __init__(
        self, units: int, use_coverage: bool = False, mask_mode: str = "neg_inf", **kwargs: Any
    ) -> None:
        super().__init__(mask_mode=mask_mode, **kwargs)
        if units <= 0:
            raise ValueError("units must be positive, got %r" % (units,))
        self.units = units
        self.use_coverage = use_coverage
        self.memory_projection = keras.layers.Dense(
            units, use_bias=False, name="W_h", dtype=self.dtype_policy
        )
        self.query_projection = keras.layers.Dense(
            units, use_bias=True, name="W_s", dtype=self.dtype_policy
        )
        self.feature_dtype = tf.as_dtype(self.compute_dtype)
        if self.feature_dtype == tf.bfloat16 and not tf.config.list_physical_devices("GPU"):
            self.feature_dtype = tf.float32
        self.energy = keras.layers.Dense(
            1,
            use_bias=False,
            name="v",
            dtype=self.dtype_policy if self.feature_dtype == self.compute_dtype else "float32",
        )
        self.coverage_projection = (
            keras.layers.Dense(units, use_bias=False, name="w_c", dtype=self.dtype_policy)
            if use_coverage
            else None
        )

    def build(self, input_shape: tf.TensorShape) -> None:
        if self.coverage_projection is not None:  # w_c exists even before its first use
            self.coverage_projection.build(tf.TensorShape([None, 1]))
        super().build(input_shape)

    def prepare(self, memory: tf.Tensor) -> tf.Tensor:
        """Returns ``W_h h_i`` [B, N, units], in the features' dtype."""
        return tf.cast(self.memory_projection(memory), self.feature_dtype)

    def score(
        self, query: tf.Tensor, keys: tf.Tensor, coverage: Optional[tf.Tensor] = None
    ) -> tf.Tensor:
        """Energies [B, T, N] for query [B, T, Q] and projected keys [B, N, units]."""
        # expand_dims, not keys[:, tf.newaxis]: the slice's gradient copies the keys at
        # every decoder step (4 ms against 0.4 for B 16, N 400, 512 units on CPU).
        query = tf.cast(self.query_projection(query), self.feature_dtype)
        features = tf.expand_dims(keys, 1) + query[:, :, tf.newaxis]
        if coverage is not None:
            features += self.coverage_term(coverage, features.dtype)
        return tf.squeeze(self.energy(tf.tanh(features)), axis=-1)

    def coverage_term(self, coverage: tf.Tensor, dtype: tf.DType) -> tf.Tensor:
        """``w_c cov_i`` [..., N, units] in ``dtype`` for coverage [..., N].

        ``w_c`` is the kernel of the ``w_c`` Dense layer, which is kept so that
        checkpoints name it as before; ``coverage_feature`` says why it is not called.
        """
        return coverage_feature(
            tf.cast(coverage, dtype), tf.cast(self.coverage_projection.kernel, dtype)
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(units=self.units, use_coverage=self.use_coverage)
        return config


class MultiplicativeScorer(_Scorer):
    """Luong attention: ``general`` ``e_t,i = h_i^T W s_t`` or ``dot`` ``h_i^T s_t``.

    ``W`` (no bias) is applied to the memory in ``prepare``, once per source batch, as
    tensorflow/nmt's ``LuongAttention`` does. With ``scale`` the energies are multiplied
    by a learned scalar ``g`` initialised to 1 (tensorflow/nmt's ``scaled_luong``).

    Args:
      units: query size; for ``general`` the size ``W`` maps the memory to. Ignored
        (may be None) for ``dot``, where memory and query sizes must already match.
      mode: ``"general"`` or ``"dot"``.
      scale: learn a scalar multiplier of the energies.
      mask_mode: see ``masked_softmax``.
      kernel_initializer: initialiser of ``W`` (tensorflow/nmt: uniform(-0.1, 0.1)).
    """

    def __init__(
        self,
        units: Optional[int] = None,
        mode: str = "general",
        scale: bool = False,
        mask_mode: str = "neg_inf",
        kernel_initializer: Union[str, keras.initializers.Initializer] = "glorot_uniform",
        **kwargs: Any,
    ) -> None:
        super().__init__(mask_mode=mask_mode, **kwargs)
        check_choice("mode", mode, MULTIPLICATIVE_MODES)
        if mode == "general" and (units is None or units <= 0):
            raise ValueError(
                "MultiplicativeScorer(mode='general') needs positive units, got %r" % (units,)
            )
        self.units = units
        self.mode = mode
        self.scale = scale
        self.memory_projection = (
            keras.layers.Dense(
                units,
                use_bias=False,
                name="W",
                dtype=self.dtype_policy,
                kernel_initializer=kernel_initializer,
            )
            if mode == "general"
            else None
        )

    def build(self, input_shape: tf.TensorShape) -> None:
        if self.scale:
            self.g = self.add_weight(name="g", shape=(), initializer="ones")
        super().build(input_shape)

    def prepare(self, memory: tf.Tensor) -> tf.Tensor:
        """Returns ``W h_i`` [B, N, units] (``general``) or the memory itself (``dot``)."""
        if self.mode == "general":
            return self.memory_projection(memory)
        return memory

    def score(
        self, query: tf.Tensor, keys: tf.Tensor, coverage: Optional[tf.Tensor] = None
    ) -> tf.Tensor:
        """Energies [B, T, N] for queries [B, T, Q] and keys [B, N, Q]."""
        del coverage
        scores = tf.einsum("btq,bnq->btn", query, tf.cast(keys, query.dtype))
        if self.scale:
            scores *= tf.cast(self.g, scores.dtype)
        return scores

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(units=self.units, mode=self.mode, scale=self.scale)
        return config


class ScaledDotProductScorer(_Scorer):
    """Transformer attention: ``e_t,i = q_t . k_i / sqrt(d)``, optionally causal.

    The layer has no weights: queries and keys arrive already projected. With
    ``causal=True`` query ``t`` of ``T`` sees key ``i`` of ``N`` only when
    ``i <= t + N - T``, so a full self-attention (T = N) is lower-triangular and an
    incremental decoder step (T = 1, the cache holding the N - 1 earlier keys and the
    current one) sees every key.

    Args:
      causal: apply the causal mask on top of the padding mask.
      mask_mode: see ``masked_softmax``.
    """

    def __init__(self, causal: bool = False, mask_mode: str = "neg_inf", **kwargs: Any) -> None:
        super().__init__(mask_mode=mask_mode, **kwargs)
        self.causal = causal

    def score(
        self, query: tf.Tensor, keys: tf.Tensor, coverage: Optional[tf.Tensor] = None
    ) -> tf.Tensor:
        """Energies [B, T, N] for queries [B, T, d] and keys [B, N, d]."""
        del coverage
        depth = query.shape[-1]
        scores = tf.einsum("btd,bnd->btn", query, tf.cast(keys, query.dtype))
        return scores / tf.cast(math.sqrt(depth), scores.dtype)

    def score_mask(self, memory_mask: tf.Tensor, scores: tf.Tensor) -> tf.Tensor:
        padding = super().score_mask(memory_mask, scores)
        if not self.causal:
            return padding
        num_queries = tf.shape(scores)[1]
        num_keys = tf.shape(scores)[2]
        query_pos = tf.range(num_queries)[:, tf.newaxis] + (num_keys - num_queries)
        causal = tf.range(num_keys)[tf.newaxis, :] <= query_pos
        return tf.logical_and(padding, causal[tf.newaxis])

    def get_config(self) -> dict:
        config = super().get_config()
        config["causal"] = self.causal
        return config

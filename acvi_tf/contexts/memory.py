"""What a context layer caches once per source batch, which every decoder step reads:
the contract's ``PreparedMemory``."""

from typing import NamedTuple, Optional

import tensorflow as tf


class PreparedMemory(NamedTuple):
    """What a context layer caches once per source batch (float32).

    Attributes:
      memory: encoder states ``h_i``, [B, N, D].
      mask: padding mask as 0/1 floats, [B, N].
      variance: ``sigma^2(h_i)``, [B, N, D] (ACVI only).
      precision: ``1 / sigma^2(h_i)``, [B, N, D] in float64 (ACVI, ``kl="mc"``).
      scaled_mean: ``h_i / sigma^2(h_i)``, [B, N, D] in float64 (ACVI, ``kl="mc"``).
      log_norm: ``-1/2 sum_d (log 2 pi + log sigma^2 + h^2 / sigma^2)``, [B, N] in
        float64 (ACVI, ``kl="mc"``), so that ``log N(c | h_i, sigma_i^2) = log_norm_i
        - 1/2 c^2 . precision_i + c . scaled_mean_i``.
      component_kl: ``KL[N(h_i, sigma_i^2) || N(0, I)]``, [B, N] (ACVI, ``kl="bound"``).
      prior_mean: mean encoder state over real positions, [B, D] (VED's attention prior).
      step_inputs: inside a teacher-forced loop, this step's slice of
        ``DeferredContractions.inputs`` (probes [B, D] by field name, and any noise the
        layer drew before the loop); None elsewhere.
    """

    memory: tf.Tensor
    mask: tf.Tensor
    variance: Optional[tf.Tensor] = None
    precision: Optional[tf.Tensor] = None
    scaled_mean: Optional[tf.Tensor] = None
    log_norm: Optional[tf.Tensor] = None
    component_kl: Optional[tf.Tensor] = None
    prior_mean: Optional[tf.Tensor] = None
    step_inputs: Optional[dict] = None

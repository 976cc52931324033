"""What a context layer caches once per source batch, which every decoder step reads:
the contract's ``PreparedMemory``."""

from typing import Any, NamedTuple, Optional

import tensorflow as tf


class PreparedMemory(NamedTuple):
    """What a context layer caches once per source batch (float32).

    Attributes:
      memory: encoder states ``h_i``, [B, N, D].
      mask: padding mask as 0/1 floats, [B, N].
      own: what the mechanism caches beside them, a nest of tensors of the mechanism's
        own making (ACVI's ``acvi.ACVIMemory``, VED's prior mean); None where it caches
        nothing more.
      step_inputs: inside a teacher-forced loop, this step's slice of
        ``DeferredContractions.inputs`` (probes [B, D] by field name, and any noise the
        layer drew before the loop); None elsewhere.
    """

    memory: tf.Tensor
    mask: tf.Tensor
    own: Any = None
    step_inputs: Optional[dict] = None

    def field(self, name: str) -> tf.Tensor:
        """``memory``, or the field ``name`` of the mechanism's ``own`` cache: a [B, N, ...]
        tensor a context is contracted from (``context.contract``)."""
        return self.memory if name == "memory" else getattr(self.own, name)

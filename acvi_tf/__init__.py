"""acvi_tf: Amortized Context Vector Inference for sequence-to-sequence models.

The shared library of the three ACVI hosts: attention scorers (``attention``), context
inference layers (``context``; ``registry`` lists the mechanisms ``--context`` picks),
shared absl flags (``flags``) and metrics (``metrics``).
Nothing here imports a model package.
"""

from acvi_tf.attention import (
    AdditiveScorer,
    MultiplicativeScorer,
    ScaledDotProductScorer,
    masked_softmax,
)
from acvi_tf.context import (
    ACVIContext,
    PreparedMemory,
    SoftAttentionContext,
    VarianceNetwork,
    average_over_samples,
    tile_for_samples,
)
from acvi_tf.registry import CONTEXTS, make_context_layer

__all__ = [
    "ACVIContext",
    "CONTEXTS",
    "AdditiveScorer",
    "MultiplicativeScorer",
    "PreparedMemory",
    "ScaledDotProductScorer",
    "SoftAttentionContext",
    "VarianceNetwork",
    "average_over_samples",
    "make_context_layer",
    "masked_softmax",
    "tile_for_samples",
]
__version__ = "0.1.0"

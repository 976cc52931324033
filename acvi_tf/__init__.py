"""acvi_tf: Amortized Context Vector Inference for sequence-to-sequence models.

The shared library of the three ACVI hosts: attention scorers (``attention``), context
inference layers (``context``; ``registry`` lists the mechanisms ``--context`` picks),
shared absl flags (``flags``) and metrics (``metrics``).
Nothing here imports a model package.

Importing the package imports ``quiet`` only (TensorFlow's start-up lines off a
command's output); the names below load their module, and TensorFlow, on first use.
"""

import importlib

from acvi_tf import quiet  # noqa: F401  (before anything imports TensorFlow)

_EXPORTS = {
    "AdditiveScorer": "acvi_tf.attention",
    "MultiplicativeScorer": "acvi_tf.attention",
    "ScaledDotProductScorer": "acvi_tf.attention",
    "masked_softmax": "acvi_tf.attention",
    "ACVIContext": "acvi_tf.context",
    "PreparedMemory": "acvi_tf.context",
    "SoftAttentionContext": "acvi_tf.context",
    "VarianceNetwork": "acvi_tf.context",
    "average_over_samples": "acvi_tf.context",
    "tile_for_samples": "acvi_tf.context",
    "CONTEXTS": "acvi_tf.registry",
    "make_context_layer": "acvi_tf.registry",
}
__all__ = sorted(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError("module 'acvi_tf' has no attribute %r" % name)

"""acvi_tf: Amortized Context Vector Inference for sequence-to-sequence models.

The shared library of the three ACVI hosts, one sub-package per layer: ``contexts``
(the context mechanisms, their registry and their part of the objective), ``layers``
(the shared LSTM and Transformer), ``training`` (the step, the loop, checkpoints,
distribution), ``inference`` (decoding, export, the inference commands' shared flags),
``text`` (tokenisers), ``formats`` (corpus files) and ``metrics``. Beside them: flags
(``flags``), the objects built from them (``builders``), the frozen run config
(``config``), errors, files, progress lines and the Keras choice (``compat``).
Nothing here imports a model package (the Runner's catalog names the hosts' Tasks and
imports one only when a command picks it).

Importing the package imports ``quiet`` only (TensorFlow's start-up lines off a
command's output); the names below load their module, and TensorFlow, on first use.

On TensorFlow 2.16 and newer it also turns on TensorFlow's legacy-Keras switch (the
environment variable below) unless it is set already: ``import tensorflow`` then loads
Keras 2 (``tf_keras``, which ``acvi_tf.compat`` gives the project) instead of Keras 3 and
the matplotlib it imports, about a second of each command's start. In a process that
imports this package before TensorFlow, TensorFlow's own Keras attribute is then Keras 2
too, as it is on TensorFlow 2.15 (where the switch stays as it is: there it would make
that attribute another package than the Keras 2.15 that TensorFlow's own modules use).
"""

import importlib
import importlib.metadata
import os

from acvi_tf import quiet  # noqa: F401  (before anything imports TensorFlow)


def _tensorflow_loads_keras_3() -> bool:
    """Whether the installed TensorFlow (2.16 or newer) loads Keras 3 at its import, read
    from its package's metadata without importing it."""
    try:
        version = importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        return False
    return tuple(int(part) for part in version.split(".")[:2]) >= (2, 16)


if _tensorflow_loads_keras_3():
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

_EXPORTS = {
    "AdditiveScorer": "acvi_tf.contexts.attention",
    "MultiplicativeScorer": "acvi_tf.contexts.attention",
    "ScaledDotProductScorer": "acvi_tf.contexts.attention",
    "masked_softmax": "acvi_tf.contexts.attention",
    "ACVIContext": "acvi_tf.contexts.acvi",
    "PreparedMemory": "acvi_tf.contexts.memory",
    "SoftAttentionContext": "acvi_tf.contexts.context",
    "VarianceNetwork": "acvi_tf.contexts.acvi",
    "average_over_samples": "acvi_tf.contexts.context",
    "tile_for_samples": "acvi_tf.contexts.context",
    "CONTEXTS": "acvi_tf.contexts.registry",
    "make_context_layer": "acvi_tf.contexts.registry",
}
__all__ = sorted(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError("module 'acvi_tf' has no attribute %r" % name)

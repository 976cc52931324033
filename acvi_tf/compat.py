"""The one place that chooses the project's Keras.

The models are written against the Keras 2 API. TensorFlow 2.15 ships it as ``tf.keras``;
from TensorFlow 2.16 on ``tf.keras`` is Keras 3 unless ``TF_USE_LEGACY_KERAS=1`` was set
before TensorFlow was first imported, and Keras 2 lives on as the ``tf_keras`` package.
Every file of the project takes Keras from here, so nothing depends on that environment
variable or on import order, and a port to Keras 3 changes this module alone (the
package's ``__init__`` sets the variable only so that TensorFlow does not load Keras 3
as well).

Example::

  from acvi_tf.compat import keras

  layer = keras.layers.Dense(8)
"""

import tensorflow as tf

__all__ = ["TF_VERSION", "keras"]


def _tf_version():
    """TensorFlow's ``(major, minor)`` version as integers."""
    major, minor = tf.__version__.split(".")[:2]
    return int(major), int(minor)


TF_VERSION = _tf_version()

if TF_VERSION < (2, 16):
    keras = tf.keras
else:
    import tf_keras as keras

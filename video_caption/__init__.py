"""Video captioning (YouTube2Text / MSVD) with ACVI: features, data, model, training."""

from acvi_tf import quiet  # noqa: F401  (before anything imports TensorFlow)

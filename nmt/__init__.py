"""Luong-style neural machine translation with ACVI (tensorflow/nmt semantics)."""

from acvi_tf import quiet  # noqa: F401  (before anything imports TensorFlow)

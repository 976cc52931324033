"""Corpus builders for the paper's corpora and the shipped demo samples."""

from acvi_tf import quiet  # noqa: F401  (before anything imports TensorFlow)

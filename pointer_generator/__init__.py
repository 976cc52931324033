"""See et al.'s pointer-generator summarizer with ACVI."""

from acvi_tf import quiet  # noqa: F401  (before anything imports TensorFlow)

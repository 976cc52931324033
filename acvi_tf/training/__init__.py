"""The training loop, its compiled step, checkpoints, distribution, clean stops
and TensorBoard images."""

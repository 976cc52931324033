"""The training loop, its compiled step, the objective's sequence terms, checkpoints,
distribution and TensorBoard images."""

"""NumPy references the model tests compare TensorFlow against (float64 where it
matters), in one place."""

import numpy as np


def np_sigmoid(x):
    """The logistic function."""
    return 1.0 / (1.0 + np.exp(-x))


def np_log_softmax(x):
    """log softmax over the last axis."""
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def np_masked_softmax(scores, mask):
    """Softmax over the real positions of the last axis (float64)."""
    scores = np.where(mask, scores.astype(np.float64), -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    e = np.where(mask, np.exp(scores), 0.0)
    return e / e.sum(axis=-1, keepdims=True)


def np_log_normal(x, mean, var):
    """log N(x | mean, diag var) summed over the last axis (float64)."""
    return -0.5 * np.sum(np.log(2 * np.pi * var) + (x - mean) ** 2 / var, axis=-1)


def np_lstm(x, h, c, cell):
    """One step of a Keras ``LSTMCell`` (gates i, f, g, o; no forget bias at run time)."""
    kernel, recurrent, bias = (w.numpy() for w in cell.weights)
    i, f, g, o = np.split(x @ kernel + h @ recurrent + bias, 4, axis=-1)
    c = np_sigmoid(f) * c + np_sigmoid(i) * np.tanh(g)
    return np_sigmoid(o) * np.tanh(c), c

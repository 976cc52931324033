"""Small inputs that the tests of several files build: a toy decoder with matching NumPy
and TensorFlow steps, a few parallel sentences, clip names that fall into every split,
and GoogLeNet weights as the caffe-tensorflow converter writes them."""

import numpy as np
import tensorflow as tf

from data_prep import splits

W, S = 7, 5  # output vocabulary and state size of the fake decoder
START, STOP = 0, 1


class FakeDecoder:
    """A tiny recurrent "model": log-probs depend on the whole history through a state."""

    def __init__(self, seed, stop_bias=0.0):
        rng = np.random.default_rng(seed)
        self.out = rng.normal(size=(S, W)).astype(np.float32) * 2.0
        self.emb = rng.normal(size=(W, S)).astype(np.float32)
        self.rec = rng.normal(size=(S, S)).astype(np.float32) * 0.5
        self.bias = np.where(np.arange(W) == STOP, stop_bias, 0.0).astype(np.float32)

    def step_np(self, token, state):
        state = np.tanh(state @ self.rec + self.emb[token])
        logits = (state @ self.out + self.bias).astype(np.float64)
        return logits - np.logaddexp.reduce(logits), state

    def step_tf(self, tokens, state, t):
        del t
        state = tf.tanh(state @ self.rec + tf.gather(self.emb, tokens))
        log_probs = tf.nn.log_softmax(state @ self.out + self.bias)
        return log_probs, state, {"state_norm": tf.norm(state, axis=-1)}


EN = [
    "The house is small.",
    "The small house is red.",
    "A red car drives home.",
    "Houses are small here.",
    "Cars drive to the red house.",
]
RO = [
    "Casa este mică.",
    "Casa mică este roșie.",
    "O mașină roșie merge acasă.",
    "Casele sunt mici aici.",
    "Mașinile merg la casa roșie.",
]


def clips_in_every_split(train, val, test):
    """Clip ids that the builders' hash split puts ``train``, ``val`` and ``test`` of in
    each split (a small corpus would leave one empty by chance)."""
    wanted = {"train": train, "val": val, "test": test}
    clips = []
    for number in range(1000):
        clip = "clip%03d" % number
        split = splits.split_of(splits.key_hash(clip), ("train", "val", "test"))
        if wanted[split]:
            wanted[split] -= 1
            clips.append(clip)
    return clips


def caffe_tensorflow_dict(model):
    """{layer: {"weights", "biases"}} as the caffe-tensorflow converter writes it."""
    data = {}
    for layer in model.layers:
        if layer.weights:
            kernel, bias = layer.get_weights()
            # Some converters keep Caffe's "/" names; both spellings must load.
            name = layer.name.replace("inception_3a_", "inception_3a/")
            data[name] = {"weights": kernel, "biases": bias}
    data["loss3_classifier"] = {
        "weights": np.zeros((1024, 1000), np.float32),
        "biases": np.zeros(1000, np.float32),
    }
    return data

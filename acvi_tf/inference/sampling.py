"""Sampling (``SamplingStrategy``) on ``search.search``, the driver: each step draws the
next token from the model's distribution at a temperature, as tensorflow/nmt's
``--infer_mode=sample`` does with ``--sampling_temperature``."""

from typing import Tuple

import tensorflow as tf

from acvi_tf.inference.greedy_search import GreedyStrategy
from acvi_tf.inference.search import SearchSettings


class SamplingStrategy(GreedyStrategy):
    """Greedy decoding's one path per input, with each token drawn from
    ``softmax(log p / temperature)`` instead of taken as the argmax. Step t draws with
    the stateless seed ``(settings.seed, t)``: the same inputs, batched the same way,
    give the same samples eagerly and in a graph (XLA's random numbers are another
    generator's, so a search compiled with XLA draws others, from the same
    distribution). ``scores`` add the drawn tokens' log-probabilities under the model
    (not the tempered ones).

    Args:
      settings: the search's; it reads ``temperature`` and ``seed`` beside what greedy
        decoding reads.

    Raises:
      ValueError: ``settings.beam_size`` is not 1, or the temperature is not positive.
    """

    def __init__(self, settings: SearchSettings) -> None:
        if not settings.temperature > 0:
            raise ValueError(
                "sampling divides by its temperature: give a temperature > 0, got %r"
                % settings.temperature
            )
        super().__init__(settings)

    def choose(self, scores: tf.Tensor, t: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """A token drawn per row, and its log-probability (``GreedyStrategy.choose``)."""
        settings = self.settings
        scores = tf.cast(scores, tf.float32)
        log_probs = tf.math.log(scores) if settings.probabilities else scores
        seed = tf.stack([tf.constant(settings.seed, tf.int32), tf.cast(t, tf.int32)])
        tokens = tf.random.stateless_categorical(
            log_probs / settings.temperature, 1, seed, dtype=tf.int32
        )[:, 0]
        return tf.gather(log_probs, tokens, batch_dims=1), tokens

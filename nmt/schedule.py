"""tensorflow/nmt's learning-rate decay schedules."""

from typing import Union

import tensorflow as tf

from acvi_tf.compat import keras


class LuongDecay(keras.optimizers.schedules.LearningRateSchedule):
    """tensorflow/nmt's ``luong*`` decay: constant, then staircase halvings.

    ``lr * 0.5 ** floor((step - start) / every)`` from ``start`` on, exactly as its
    ``exponential_decay(lr, step - start, every, 0.5, staircase=True)``: for luong234 and
    12K steps, 1.0 until step 8999, then 0.5, 0.25 and 0.125 from steps 9K, 10K and 11K
    (the fourth halving would start at 12K, where training ends).

    Args:
      learning_rate: the rate before the first halving.
      start: the step of the first halving.
      every: steps between two halvings.
    """

    def __init__(self, learning_rate: float, start: int, every: int) -> None:
        self.learning_rate = learning_rate
        self.start = start
        self.every = every

    def __call__(self, step: tf.Tensor) -> tf.Tensor:
        decays = tf.maximum(tf.cast(step, tf.float32) - self.start, 0.0) // self.every
        return self.learning_rate * tf.pow(0.5, decays)

    def get_config(self) -> dict:
        """The constructor's arguments, as Keras serialises a schedule."""
        return dict(learning_rate=self.learning_rate, start=self.start, every=self.every)


def decay_schedule(
    learning_rate: float, decay_scheme: str, num_train_steps: int
) -> Union[float, LuongDecay]:
    """The learning rate of ``--decay_scheme`` ("" is a constant rate).

    luong234 starts at 2/3 of the run with 4 halvings, luong5 and luong10 at half the run
    with 5 and 10; the halving interval divides the remaining steps evenly.
    """
    if not decay_scheme:
        return learning_rate
    n = num_train_steps
    start, decays = {
        "luong234": (int(2 * n / 3), 4),
        "luong5": (n // 2, 5),
        "luong10": (n // 2, 10),
    }[decay_scheme]
    return LuongDecay(learning_rate, start, max((n - start) // decays, 1))

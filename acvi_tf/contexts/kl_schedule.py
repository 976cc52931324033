"""How every KL term enters a host's training loss: weight, warm-up and free bits.

Each host adds ``KLSchedule.term(kl, step, normalise, weight)`` for each of its KL terms
(ACVI's per-step context KL, VED's attention and sentence-latent KLs, Deng et al.'s
alignment KL): ``weight * factor(step) * normalise(max(kl, free_bits))``.

* Warm-up (Bowman et al., 2016): the factor grows from 0 to 1, ``"linear"`` over
  ``anneal_steps``, or VED's original ``"tanh"`` schedule
  ``(tanh((step - 4500) / 1000) + 1) / 2``, which the original updates only while
  ``step <= 3000``, so it stays near 0.047.
* Free bits (Kingma et al., 2016): KL below ``free_bits`` nats per decoder step (per
  example for a sentence latent) costs nothing, so the optimiser gains nothing by
  pushing it lower. The floor is applied per step and per example before the host's
  normalisation; the host reports the KL itself, without the floor.
"""

from typing import Callable, NamedTuple, Union

import tensorflow as tf

ANNEALINGS = ("none", "linear", "tanh")


def annealing_factor(
    step: Union[tf.Tensor, int], annealing: str = "none", anneal_steps: int = 10000
) -> tf.Tensor:
    """The warm-up factor in [0, 1] at training ``step`` (a float32 scalar tensor).

    Args:
      step: the global step (0-based).
      annealing: one of ``ANNEALINGS``.
      anneal_steps: steps of the ``"linear"`` ramp.
    """
    if annealing not in ANNEALINGS:
        raise ValueError("annealing must be one of %s, got %r" % (ANNEALINGS, annealing))
    step = tf.cast(step, tf.float32)
    if annealing == "none":
        return tf.constant(1.0)
    if annealing == "linear":
        return tf.minimum(1.0, step / float(max(anneal_steps, 1)))
    return (tf.tanh((tf.minimum(step, 3000.0) - 4500.0) / 1000.0) + 1.0) / 2.0


class KLSchedule(NamedTuple):
    """The KL weighting a run trains with (``--kl_annealing``, ``--kl_anneal_steps``,
    ``--kl_free_bits``); the default adds every KL as it is.

    Attributes:
      annealing: one of ``ANNEALINGS``.
      anneal_steps: steps of the linear warm-up.
      free_bits: nats per decoder step (or per example) that cost nothing; 0: none.
    """

    annealing: str = "none"
    anneal_steps: int = 10000
    free_bits: float = 0.0

    def factor(self, step: Union[tf.Tensor, int]) -> tf.Tensor:
        """The warm-up factor at ``step`` (float32 scalar), for the loss and TensorBoard."""
        return annealing_factor(step, self.annealing, self.anneal_steps)

    def term(
        self,
        kl: tf.Tensor,
        step: Union[tf.Tensor, int],
        normalise: Callable[[tf.Tensor], tf.Tensor],
        weight: float = 1.0,
    ) -> tf.Tensor:
        """``weight * factor(step) * normalise(max(kl, free_bits))``, a scalar.

        Args:
          kl: a KL per decoder step [B, T] or per example [B], float32.
          step: the global step.
          normalise: the host's reduction of ``kl`` to a scalar (the one its NLL uses).
          weight: the term's own weight (``--kl_weight``; 1 for VED's ``KL_z``).
        """
        if self.free_bits > 0:
            kl = tf.maximum(kl, self.free_bits)
        return weight * self.factor(step) * normalise(kl)

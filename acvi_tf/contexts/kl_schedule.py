"""How every KL term enters a host's training loss: weight, warm-up and free bits.

Each host adds ``KLSchedule.term(kl, step, normalise, weight, mask)`` for each of its KL
terms (ACVI's per-step context KL, VED's attention and sentence-latent KLs, Deng et al.'s
alignment KL): ``weight * factor(step) * normalise(floored kl)``.

* Warm-up (Bowman et al., 2016): the factor grows from 0 to 1, ``"linear"`` over
  ``anneal_steps``, or VED's original ``"tanh"`` schedule
  ``(tanh((step - 4500) / 1000) + 1) / 2``, which the original updates only while
  ``step <= 3000``, so it stays near 0.047.
* Free bits (Kingma et al., 2016): KL below ``free_bits`` nats costs nothing, so the
  optimiser gains nothing by pushing it lower. The groups are the decoder steps (the
  whole latent for a per-example KL such as VED's ``KL_z``). ``"minibatch"`` is Kingma
  et al.'s form, ``sum_j max(free_bits, E_minibatch[KL_j])``: a group whose KL averaged
  over the minibatch's examples that have it (the real rows of its column) is below the
  floor counts as the constant ``free_bits`` at every real entry, a group at or above
  it as it is. ``"example"`` floors every example's KL at every step,
  ``max(KL_bj, free_bits)``. Both floor the KL in its own units, nats per step (per
  example for a sentence latent), before the host's ``normalise`` weighs and sums the
  entries; with tensorflow/nmt's normalisation (each real entry weighted 1 / B) the
  minibatch form is exactly ``sum_j (n_j / B) max(free_bits, E_j)``, ``n_j`` the
  examples with step j. Under a distribution strategy the minibatch is the replica's
  rows. The host reports the KL itself, without the floor.
"""

from typing import Callable, NamedTuple, Optional, Union

import tensorflow as tf

ANNEALINGS = ("none", "linear", "tanh")
# How free bits floor a KL: Kingma et al.'s minibatch average per group, or each entry.
FREE_BITS_FORMS = ("minibatch", "example")


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


def floor_by_example(kl: tf.Tensor, free_bits: float) -> tf.Tensor:
    """``max(kl, free_bits)`` at every entry: each example's KL at each step floored."""
    return tf.maximum(kl, free_bits)


def floor_by_minibatch(
    kl: tf.Tensor, free_bits: float, mask: Optional[tf.Tensor] = None
) -> tf.Tensor:
    """Kingma et al.'s free bits: each group's entries, or the constant ``free_bits`` at
    every entry of a group whose minibatch average is below it.

    A group is a column of ``kl`` [B, T] (a decoder step), or the whole of a per-example
    ``kl`` [B]; its average is over its real entries. A floored group passes no gradient.

    Args:
      kl: a KL per decoder step [B, T] or per example [B], float32.
      free_bits: the floor, in nats per entry.
      mask: which entries of ``kl`` are real (1) or padding (0), its shape; None: all.

    Returns:
      ``kl``'s shape: the floored KL, for the host's ``normalise`` (which skips padding).
    """
    real = tf.ones_like(kl) if mask is None else tf.cast(mask, kl.dtype)
    average = tf.reduce_sum(kl * real, axis=0) / tf.maximum(tf.reduce_sum(real, axis=0), 1.0)
    floor = tf.fill(tf.shape(kl), tf.cast(free_bits, kl.dtype))
    return tf.where(average < free_bits, floor, kl)


class KLSchedule(NamedTuple):
    """The KL weighting a run trains with (``--kl_annealing``, ``--kl_anneal_steps``,
    ``--kl_free_bits``, ``--kl_free_bits_form``); the default adds every KL as it is.

    Attributes:
      annealing: one of ``ANNEALINGS``.
      anneal_steps: steps of the linear warm-up.
      free_bits: nats per decoder step (or per example) that cost nothing; 0: none.
      free_bits_form: one of ``FREE_BITS_FORMS``: ``floor_by_minibatch`` (Kingma et
        al.'s) or ``floor_by_example``.
    """

    annealing: str = "none"
    anneal_steps: int = 10000
    free_bits: float = 0.0
    free_bits_form: str = "minibatch"

    def factor(self, step: Union[tf.Tensor, int]) -> tf.Tensor:
        """The warm-up factor at ``step`` (float32 scalar), for the loss and TensorBoard."""
        return annealing_factor(step, self.annealing, self.anneal_steps)

    def term(
        self,
        kl: tf.Tensor,
        step: Union[tf.Tensor, int],
        normalise: Callable[[tf.Tensor], tf.Tensor],
        weight: float = 1.0,
        mask: Optional[tf.Tensor] = None,
    ) -> tf.Tensor:
        """``weight * factor(step) * normalise(floored kl)``, a scalar.

        Args:
          kl: a KL per decoder step [B, T] or per example [B], float32.
          step: the global step.
          normalise: the host's reduction of ``kl`` to a scalar (the one its NLL uses).
          weight: the term's own weight (``--kl_weight``; 1 for VED's ``KL_z``).
          mask: the real (1) and padded (0) entries of ``kl``, for the minibatch form's
            averages; None: every entry is real.

        Raises:
          ValueError: ``free_bits_form`` is not one of ``FREE_BITS_FORMS``.
        """
        if self.free_bits_form not in FREE_BITS_FORMS:
            raise ValueError(
                "free_bits_form must be one of %s, got %r" % (FREE_BITS_FORMS, self.free_bits_form)
            )
        if self.free_bits > 0 and self.free_bits_form == "example":
            kl = floor_by_example(kl, self.free_bits)
        elif self.free_bits > 0:
            kl = floor_by_minibatch(kl, self.free_bits, mask)
        return weight * self.factor(step) * normalise(kl)

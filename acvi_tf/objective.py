"""The context mechanism's part of every host's training objective.

Each host computes its likelihood term and reduces it its own way (tensorflow/nmt's and
arctic's sum over a sequence averaged over the batch, See's per-token mean); everything a
context mechanism adds to it is formed here, reduced the same way:

  ``loss = NLL + kl_weight * schedule(KL_c) + schedule(KL_z) + regularization``

``KL_c`` [B, T] is the mechanism's KL per decoder step (ACVI's, the variational
attention's; zeros for soft attention), ``KL_z`` [B] VED's sentence-latent KL, and the
regularization a penalty on the mechanism's own weights (structured attention's). Both
KLs go through one ``kl_schedule.KLSchedule`` (warm-up, free bits). With K Monte-Carlo
samples the host's batch is ``tile_batch``'s K copies, one decoder trajectory each.
"""

from typing import Callable, Dict, Optional, Tuple

import tensorflow as tf

from acvi_tf import context, kl_schedule


def tile_batch(batch: Dict[str, tf.Tensor], num_samples: int) -> Dict[str, tf.Tensor]:
    """Every tensor of ``batch`` repeated ``num_samples`` times along the batch axis
    (``context.tile_for_samples``): sample k of example b is row ``b * K + k``. Scalars
    (the summarizer's ``max_art_oovs``) stay as they are."""
    return {
        name: value if value.shape.rank == 0 else context.tile_for_samples(value, num_samples)
        for name, value in batch.items()
    }


def context_terms(
    out: Dict[str, tf.Tensor],
    step: tf.Tensor,
    normalise: Callable[[tf.Tensor], tf.Tensor],
    context_layer: Optional[context.ContextLayer] = None,
    kl_terms: kl_schedule.KLSchedule = kl_schedule.KLSchedule(),
    per_example: Callable[[tf.Tensor], tf.Tensor] = tf.reduce_mean,
) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """The terms a context mechanism adds to a host's NLL, and what to log of them.

    Args:
      out: the host model's training outputs: ``kl`` [B, T], ``prepared`` (the context
        layer's ``PreparedMemory``, for its ``statistics``; absent where the layer has
        none) and, where the mechanism has
        a sentence latent, ``kl_z`` [B].
      step: the global step (for the schedule).
      normalise: the host's reduction of a per-step [B, T] tensor to the scalar its NLL
        uses.
      context_layer: the model's context layer (its ``kl_weight`` and
        ``regularization``); None for a model without one (the Transformer), whose
        ``kl`` then carries no weight.
      kl_terms: the KL schedule.
      per_example: the host's reduction of a per-example [B] tensor to a scalar.

    Returns:
      ``(loss, logs)``: the scalar to add to the NLL, and ``kl`` (``KL_c`` reduced like
      the NLL, before weight and schedule), ``kl_z`` (0 without a sentence latent) and
      ``kl_factor`` (the warm-up factor) for TensorBoard, and the context layer's
      ``statistics`` (ACVI's sigma).
    """
    kl_weight = getattr(context_layer, "kl_weight", 0.0)
    loss = kl_terms.term(out["kl"], step, normalise, kl_weight)
    logs = dict(kl=normalise(out["kl"]), kl_z=tf.constant(0.0), kl_factor=kl_terms.factor(step))
    if context_layer is not None:
        loss += context_layer.regularization()
        logs.update(context_layer.statistics(out.get("prepared")))
    kl_z = out.get("kl_z")
    if kl_z is not None:
        loss += kl_terms.term(kl_z, step, per_example)
        logs["kl_z"] = per_example(kl_z)
    return loss, logs

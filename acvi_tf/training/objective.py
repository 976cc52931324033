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

A host model's ``compute_loss(batch, outputs, step)`` forms its loss from these:
``sequence_objective`` is the NMT model's and the captioner's (which adds its own terms
on top), ``with_context_terms`` adds the terms to the summarizer's See loss.
``training.make_train_step`` runs ``compute_loss`` under the gradient tape.
"""

import functools
from typing import Callable, Dict, Optional, Tuple

import tensorflow as tf

from acvi_tf.contexts import context, kl_schedule
from acvi_tf.training import losses


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
    kl_terms: Optional[kl_schedule.KLSchedule] = None,
    per_example: Callable[[tf.Tensor], tf.Tensor] = tf.reduce_mean,
    mask: Optional[tf.Tensor] = None,
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
      kl_terms: the KL schedule (None: ``KLSchedule()``, every KL as it is).
      per_example: the host's reduction of a per-example [B] tensor to a scalar.
      mask: [B, T], the real (1) and padded (0) decoder steps, for the schedule's
        minibatch free bits (``KLSchedule.term``); None: every step is real.

    Returns:
      ``(loss, logs)``: the scalar to add to the NLL, and ``kl`` (``KL_c`` reduced like
      the NLL, before weight and schedule), ``kl_z`` (0 without a sentence latent) and
      ``kl_factor`` (the warm-up factor), ``kl_per_token`` (``KL_c`` in nats per real
      decoder step, the same in every host, whatever its ``normalise``) for TensorBoard,
      and the context layer's ``statistics`` (ACVI's sigma).
    """
    kl_terms = kl_terms or kl_schedule.KLSchedule()
    logs = dict(
        kl=normalise(out["kl"]),
        kl_z=tf.constant(0.0),
        kl_factor=kl_terms.factor(step),
        kl_per_token=losses.token_mean(out["kl"], mask),
    )
    if context_layer is None:
        return kl_terms.term(out["kl"], step, normalise, 0.0, mask), logs
    loss = kl_terms.term(out["kl"], step, normalise, context_layer.kl_weight, mask)
    loss += context_layer.regularization()
    logs.update(context_layer.statistics(out.get("prepared")))
    kl_z = out.get("kl_z")
    if kl_z is not None and context_layer.has_sentence_latent:
        loss += kl_terms.term(kl_z, step, per_example)
        logs["kl_z"] = per_example(kl_z)
    return loss, logs


def with_context_terms(
    data_loss: tf.Tensor,
    out: Dict[str, tf.Tensor],
    step: tf.Tensor,
    normalise: Callable[[tf.Tensor], tf.Tensor],
    context_layer: Optional[context.ContextLayer] = None,
    kl_terms: Optional[kl_schedule.KLSchedule] = None,
    per_example: Callable[[tf.Tensor], tf.Tensor] = tf.reduce_mean,
    mask: Optional[tf.Tensor] = None,
) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """A host's loss with the context mechanism's terms added.

    Args:
      data_loss: the host's own loss (its NLL and any terms of its own), a scalar.
      out: as ``context_terms``, with the host's ``token_nll`` [B, T] (the gold
        tokens' per-step loss).
      step, normalise, context_layer, kl_terms, per_example, mask: as
        ``context_terms``.

    Returns:
      ``(data_loss + terms, logs)``, the logs those of ``context_terms`` and
      ``nll_per_token``, ``token_nll`` per real decoder step: with ``kl_per_token``,
      the negative ELBO per token where the mechanism's weight-1 objective is one.
    """
    terms, logs = context_terms(out, step, normalise, context_layer, kl_terms, per_example, mask)
    logs["nll_per_token"] = losses.token_mean(out["token_nll"], mask)
    return data_loss + terms, logs


def sequence_objective(
    out: Dict[str, tf.Tensor],
    targets: tf.Tensor,
    lengths: tf.Tensor,
    step: tf.Tensor,
    context_layer: Optional[context.ContextLayer] = None,
    kl_terms: Optional[kl_schedule.KLSchedule] = None,
    total_key: str = "total",
    count_key: str = "tokens",
) -> Dict[str, tf.Tensor]:
    """tensorflow/nmt's and arctic-capgen-vid's objective with the context terms.

    The NLL of each target sequence summed over its tokens, averaged over the batch
    (``losses.sequence_loss``), plus ``context_terms`` normalised the same way. With K
    Monte-Carlo samples (a batch ``tile_batch`` repeated K times) the average is over the
    K copies too, and the token count is that of one copy.

    Args:
      out: the model's training outputs: ``logits`` [B, T, V], ``token_nll`` [B, T]
        (the per-step loss of the gold words: the cross-entropy, or the context
        mechanism's own), ``kl`` [B, T], and where the mechanism has them ``kl_z`` [B]
        and ``prepared``.
      targets: [B, T] gold ids.
      lengths: [B] target lengths.
      step: the global step (for the KL schedule).
      context_layer: the model's context layer; None for a model without one.
      kl_terms: the KL schedule (None: ``KLSchedule()``).
      total_key, count_key: the names of the total and of the token count.

    Returns:
      A dict of scalars: under ``total_key`` the loss to minimise, ``nll``, under
      ``count_key`` the target tokens of one copy of the batch (``</s>`` included), and
      the logs of ``context_terms``.
    """
    nll, count = losses.sequence_loss(
        out["logits"],
        targets,
        lengths,
        token_nll=out["token_nll"],
    )
    per_sequence = functools.partial(losses.per_sequence, lengths=lengths)
    mask = tf.sequence_mask(lengths, tf.shape(out["kl"])[1], dtype=tf.float32)
    total, logs = with_context_terms(
        nll, out, step, per_sequence, context_layer, kl_terms, mask=mask
    )
    num_samples = 1 if context_layer is None else context_layer.num_samples
    return dict(logs, nll=nll, **{total_key: total, count_key: count / num_samples})

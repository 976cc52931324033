"""The final distribution and the losses of the pointer-generator.

The final distribution over the extended vocabulary is
``P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{i: x_i = w} a_t,i``: the copy distribution is
scatter-added onto the article's extended ids, so a word repeated in the article gets the
sum of its attention (the original's ``tf.scatter_nd`` does the same; abisee issue #22).

The training loss never builds that [B, T, V + OOVs] tensor: it needs ``P(gold)`` only,
computed in log space as ``logaddexp(log p_gen + log P_vocab(gold),
log(1 - p_gen) + log copy_mass(gold))`` with ``log p_gen = log_sigmoid(z)``, so neither a
saturated p_gen nor a zero probability can make it NaN (the original's ``-log(P)`` could:
abisee issues #4 and #41).
"""

from typing import Dict, Optional, Union

import tensorflow as tf

from acvi_tf.contexts import context as context_lib
from acvi_tf.contexts import kl_schedule
from acvi_tf.training import losses as seq_losses
from acvi_tf.training import objective

# log of probabilities below this is taken at this value: a gold word with no copy mass
# contributes exp(-69) there, and the gradient of the clamp is 0 instead of inf.
_TINY = 1e-30
_LOG_ZERO = -1e30


def mask_and_avg(values: tf.Tensor, padding_mask: tf.Tensor) -> tf.Tensor:
    """See's ``_mask_and_avg`` before the batch mean: per example, the mean over its steps.

    Args:
      values: [B, T] per-step values.
      padding_mask: [B, T] decoder padding mask.

    Returns:
      [B]: ``sum_t values * mask / sum_t mask``.
    """
    padding_mask = tf.cast(padding_mask, values.dtype)
    lengths = tf.reduce_sum(padding_mask, axis=1)
    return tf.math.divide_no_nan(tf.reduce_sum(values * padding_mask, axis=1), lengths)


def copy_mass(attn: tf.Tensor, enc_batch_extend_vocab: tf.Tensor, ids: tf.Tensor) -> tf.Tensor:
    """``sum_{i: x_i = id} a_t,i``: the attention on article positions holding ``ids``.

    Args:
      attn: [B, T, N] attention.
      enc_batch_extend_vocab: [B, N] article ids in the extended vocabulary.
      ids: [B, T] extended ids.
    """
    same = tf.equal(enc_batch_extend_vocab[:, tf.newaxis, :], ids[:, :, tf.newaxis])
    return tf.reduce_sum(attn * tf.cast(same, attn.dtype), axis=-1)


def gold_log_probs(
    vocab_logits: tf.Tensor,
    attn: tf.Tensor,
    p_gen_logit: tf.Tensor,
    enc_batch_extend_vocab: tf.Tensor,
    target_batch: tf.Tensor,
) -> tf.Tensor:
    """``log P(target)`` [B, T] under the final distribution, computed in log space."""
    vocab_logits = tf.cast(vocab_logits, tf.float32)
    p_gen_logit = tf.cast(p_gen_logit, tf.float32)
    vocab_size = tf.shape(vocab_logits)[-1]
    in_vocab = target_batch < vocab_size
    log_p_vocab = -tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.minimum(target_batch, vocab_size - 1), logits=vocab_logits
    )
    generate = tf.where(in_vocab, tf.math.log_sigmoid(p_gen_logit) + log_p_vocab, _LOG_ZERO)
    copy = tf.math.log_sigmoid(-p_gen_logit) + tf.math.log(
        tf.maximum(copy_mass(attn, enc_batch_extend_vocab, target_batch), _TINY)
    )
    return tf.reduce_logsumexp(tf.stack([generate, copy], axis=-1), axis=-1)


def gold_log_likelihood(
    out: Dict[str, tf.Tensor], batch: Dict[str, tf.Tensor], pointer_gen: bool = True
) -> tf.Tensor:
    """``log P(target)`` [B, T] of the model's outputs: under the final distribution
    (``gold_log_probs``) with ``pointer_gen``, else under the vocabulary softmax."""
    if pointer_gen:
        return gold_log_probs(
            out["vocab_logits"],
            out["attn"],
            out["p_gen_logit"],
            batch["enc_batch_extend_vocab"],
            batch["target_batch"],
        )
    return -tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=batch["target_batch"], logits=tf.cast(out["vocab_logits"], tf.float32)
    )


def article_oov_slots(inputs: Dict[str, tf.Tensor], rows: tf.Tensor) -> tf.Tensor:
    """The decoding constant that carries a batch's ``max_art_oovs``: [rows,
    max_art_oovs] zeros (max_art_oovs 0 where ``inputs`` has none).

    Its width is the extended part of the vocabulary. A shape, unlike a scalar, is tiled
    and shrunk with the beam's rows, and stays a compile-time constant under XLA.

    Args:
      inputs: the batch.
      rows: its number of articles.

    Returns:
      bool [rows, max_art_oovs].
    """
    return tf.zeros([rows, inputs.get("max_art_oovs", 0)], tf.bool)


def final_distribution(
    vocab_dists: tf.Tensor,
    attn: tf.Tensor,
    p_gen: tf.Tensor,
    enc_batch_extend_vocab: tf.Tensor,
    max_art_oovs: Union[int, tf.Tensor],
) -> tf.Tensor:
    """The explicit final distribution over the extended vocabulary (for decoding).

    Args:
      vocab_dists: [B, T, V] softmax of the vocabulary logits.
      attn: [B, T, N] attention.
      p_gen: [B, T] generation probability.
      enc_batch_extend_vocab: [B, N] article ids in the extended vocabulary.
      max_art_oovs: the batch's largest number of article OOVs.

    Returns:
      [B, T, V + max_art_oovs]; every row sums to 1.
    """
    p_gen = p_gen[..., tf.newaxis]
    generated = p_gen * vocab_dists
    extended = tf.pad(generated, [[0, 0], [0, 0], [0, max_art_oovs]])
    copied = (1.0 - p_gen) * attn
    batch, steps, positions = tf.unstack(tf.shape(attn))
    b = tf.broadcast_to(tf.range(batch)[:, None, None], [batch, steps, positions])
    t = tf.broadcast_to(tf.range(steps)[None, :, None], [batch, steps, positions])
    w = tf.broadcast_to(enc_batch_extend_vocab[:, None, :], [batch, steps, positions])
    indices = tf.stack([b, t, w], axis=-1)
    return tf.tensor_scatter_nd_add(extended, indices, copied)


def compute_losses(
    out: Dict[str, tf.Tensor],
    batch: Dict[str, tf.Tensor],
    pointer_gen: bool = True,
    coverage_on: bool = False,
    cov_loss_wt: float = 1.0,
    context_layer: Optional[context_lib.ContextLayer] = None,
    num_samples: int = 1,
    kl_terms: Optional[kl_schedule.KLSchedule] = None,
    step: Union[int, tf.Tensor] = 0,
) -> Dict[str, tf.Tensor]:
    """The training objective and its parts, normalised as the original does.

    Pointer-gen: per example, the mean over its decoder steps, then the batch mean
    (``_mask_and_avg``). Baseline (``pointer_gen=False``): ``sequence_loss``'s token mean.
    The coverage loss and the context mechanism's terms (``objective.with_context_terms``)
    take the same normalisation as the NLL. With K Monte-Carlo samples (a batch tiled K times)
    per-example values are averaged over the samples first.

    Args:
      out: the dict ``PointerGenerator.call`` returns for a batch with its gold summary
        (whose ``token_nll`` [B, T] is the NLL reduced here).
      batch: the batch dict (``target_batch``, ``dec_padding_mask``,
        ``enc_batch_extend_vocab``).
      pointer_gen, coverage_on, cov_loss_wt, num_samples: as the flags.
      context_layer: the model's context layer (its ``kl_weight`` and regularization);
        None adds no context terms.
      kl_terms: the ``KLSchedule`` every KL term enters the loss through (None: each
        as it is).
      step: the global step (for the schedule).

    Returns:
      A dict of scalars: ``loss`` (the NLL), ``coverage_loss``, ``kl``, ``kl_z`` (VED's
      sentence-latent KL, per example, batch mean), ``kl_factor`` (the schedule's
      warm-up factor), ``total_loss``.
    """
    mask = batch["dec_padding_mask"]
    nll = out["token_nll"]

    def normalise(values):
        if not pointer_gen:
            return seq_losses.token_mean(values, mask)
        per_example = context_lib.average_over_samples(mask_and_avg(values, mask), num_samples)
        return tf.reduce_mean(per_example)

    def example_mean(values):
        return tf.reduce_mean(context_lib.average_over_samples(values, num_samples))

    losses = dict(loss=normalise(nll))
    losses["coverage_loss"] = normalise(out["coverage_terms"]) if coverage_on else tf.constant(0.0)
    see_loss = losses["loss"] + cov_loss_wt * losses["coverage_loss"]
    losses["total_loss"], logs = objective.with_context_terms(
        see_loss, out, step, normalise, context_layer, kl_terms, example_mean, mask
    )
    return dict(logs, **losses)


def summarizer_losses(
    batch: Dict[str, tf.Tensor],
    out: Dict[str, tf.Tensor],
    step: Union[int, tf.Tensor],
    pointer_gen: bool = True,
    cov_loss_wt: float = 1.0,
    context_layer: Optional[context_lib.ContextLayer] = None,
    kl_terms: Optional[kl_schedule.KLSchedule] = None,
) -> Dict[str, tf.Tensor]:
    """A summarizer's ``compute_loss``: ``compute_losses`` and what a step logs besides.

    The coverage loss is that of ``out["coverage_terms"]``, zeros when the model ran
    without coverage; ``num_samples`` is the context layer's.

    Args:
      batch: the (sample-tiled) batch ``out`` is of.
      out: the model's training outputs (with ``p_gen_logit``).
      step: the global step (for the schedule).
      pointer_gen, cov_loss_wt, context_layer, kl_terms: as ``compute_losses``.

    Returns:
      ``compute_losses``'s scalars (the total under ``total_loss``) with ``p_gen`` (its
      mean over the real decoder steps) and ``tokens`` (the target tokens of one copy
      of the batch).
    """
    mask = batch["dec_padding_mask"]
    num_samples = 1 if context_layer is None else context_layer.num_samples
    losses = compute_losses(
        out, batch, pointer_gen, True, cov_loss_wt, context_layer, num_samples, kl_terms, step
    )
    p_gen = tf.sigmoid(tf.cast(out["p_gen_logit"], tf.float32))
    losses["p_gen"] = tf.reduce_sum(p_gen * mask) / tf.reduce_sum(mask)
    losses["tokens"] = tf.reduce_sum(mask) / num_samples
    return losses

"""Sequence losses the hosts share.

``sequence_loss`` is tensorflow/nmt's objective, also arctic-capgen-vid's (the NLL of each
target sequence summed over its tokens, averaged over the batch); the pointer-generator
keeps See's per-example mean in ``pointer_generator.losses``; ``token_mean`` is the
mean over a batch's real tokens (the summarizer's baseline loss, the logged per-token terms).
"""

import math
from typing import Optional, Tuple

import tensorflow as tf

# Perplexities are capped at e^88 (1.7e38), inside float32: a diverging run reaches its NaN
# guard instead of an overflow in tf.summary.
MAX_LOG_PERPLEXITY = 88.0


def token_mean(values: tf.Tensor, mask: Optional[tf.Tensor] = None) -> tf.Tensor:
    """The mean of [B, T] ``values`` over the real (``mask`` 1) steps of the batch, a
    float32 scalar (0 where none is real); ``mask`` None: over every step."""
    values = tf.cast(values, tf.float32)
    if mask is None:
        return tf.reduce_mean(values)
    mask = tf.cast(mask, tf.float32)
    return tf.math.divide_no_nan(tf.reduce_sum(values * mask), tf.reduce_sum(mask))


def per_sequence(values: tf.Tensor, lengths: tf.Tensor) -> tf.Tensor:
    """tensorflow/nmt's normalisation: ``values`` [B, T] summed over each sequence's
    first ``lengths`` steps, averaged over the batch (a float32 scalar)."""
    mask = tf.sequence_mask(lengths, tf.shape(values)[1], dtype=tf.float32)
    return tf.reduce_sum(tf.cast(values, tf.float32) * mask) / tf.cast(
        tf.shape(values)[0], tf.float32
    )


def sequence_loss(
    logits: tf.Tensor,
    tgt_out: tf.Tensor,
    tgt_len: tf.Tensor,
    token_nll: Optional[tf.Tensor] = None,
) -> Tuple[tf.Tensor, tf.Tensor]:
    """tensorflow/nmt's loss: masked token cross-entropy summed, divided by the batch size.

    A host adds its KL terms with the same normalisation (``per_sequence``, through
    ``kl_schedule.KLSchedule.term``). ``token_nll`` [B, T], when given, replaces the
    cross-entropy of ``logits`` (the variational attention's per-step terms,
    ``alignment_losses``).

    Returns:
      ``(nll, predict_count)``: the NLL and the number of target tokens (``</s>``
      included), for perplexity.
    """
    xent = token_nll
    if xent is None:
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tgt_out, logits=tf.cast(logits, tf.float32)
        )
    count = tf.reduce_sum(tf.sequence_mask(tgt_len, tf.shape(tgt_out)[1], dtype=tf.float32))
    return per_sequence(xent, tgt_len), count


def perplexity(total_nll: float, total_tokens: float) -> float:
    """``exp(total_nll / total_tokens)``, capped at ``exp(MAX_LOG_PERPLEXITY)``."""
    return math.exp(min(total_nll / max(total_tokens, 1.0), MAX_LOG_PERPLEXITY))

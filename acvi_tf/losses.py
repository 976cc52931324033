"""Sequence losses the hosts share.

``sequence_loss`` is tensorflow/nmt's objective, also arctic-capgen-vid's (the NLL of each
target sequence summed over its tokens, averaged over the batch); the pointer-generator
keeps See's per-token mean in ``pointer_generator.losses``.
"""
import tensorflow as tf


def sequence_loss(logits, tgt_out, tgt_len, kl=None, kl_weight=0.0, token_nll=None):
    """tensorflow/nmt's loss: masked token cross-entropy summed, divided by the batch size.

    The ACVI KL of every real target step is added with the same normalisation.
    ``token_nll`` [B, T], when given, replaces the cross-entropy of ``logits`` (the
    variational attention's per-step terms, ``alignment_losses``).

    Returns:
      ``(loss, nll, kl, predict_count)``: the training objective, its NLL part, its KL
      part and the number of target tokens (``</s>`` included), for perplexity.
    """
    mask = tf.sequence_mask(tgt_len, tf.shape(tgt_out)[1], dtype=tf.float32)
    xent = token_nll
    if xent is None:
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tgt_out, logits=tf.cast(logits, tf.float32))
    batch = tf.cast(tf.shape(tgt_out)[0], tf.float32)
    nll = tf.reduce_sum(xent * mask) / batch
    kl_term = tf.reduce_sum(kl * mask) / batch if kl is not None else tf.constant(0.0)
    return nll + kl_weight * kl_term, nll, kl_term, tf.reduce_sum(mask)

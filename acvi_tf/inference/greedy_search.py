"""Greedy decoding: the most likely token at every step, for many inputs in one graph."""

from typing import Any, Callable, Dict, Tuple, Union

import tensorflow as tf

from acvi_tf.inference.decoding import SearchSettings, cut_at_stop, top_k_log


def greedy_search(
    step_fn: Callable[[tf.Tensor, Any, tf.Tensor], Tuple[tf.Tensor, Any, Dict[str, tf.Tensor]]],
    initial_state: Any,
    batch_size: Union[tf.Tensor, int],
    settings: SearchSettings,
) -> Dict[str, tf.Tensor]:
    """Greedy decoding with the same ``step_fn`` contract as ``beam_search``; it reads
    ``settings``' ``max_steps``, ``start_id``, ``stop_id``, ``probabilities`` and
    ``step_limit``.

    Returns:
      ``ids`` [B, max_steps] (cut before the first stop, padded with ``stop_id``),
      ``lengths`` [B] and ``scores`` [B] (total log-probability of the kept tokens).
    """

    max_steps, start_id, stop_id = settings.max_steps, settings.start_id, settings.stop_id
    probabilities, step_limit = settings.probabilities, settings.step_limit

    def body(t, tokens, state, ids, scores, finished):
        step_scores, state, _ = step_fn(tokens, state, t)
        step_logp, next_ids = top_k_log(step_scores, 1, probabilities)
        next_ids = tf.where(finished, stop_id, next_ids[:, 0])
        step_logp = step_logp[:, 0]
        scores += tf.where(tf.logical_or(finished, tf.equal(next_ids, stop_id)), 0.0, step_logp)
        ids = tf.where(tf.equal(tf.range(max_steps)[tf.newaxis], t), next_ids[:, tf.newaxis], ids)
        return (
            t + 1,
            next_ids,
            state,
            ids,
            scores,
            tf.logical_or(finished, tf.equal(next_ids, stop_id)),
        )

    limit = max_steps if step_limit is None else step_limit

    def cond(t, tokens, state, ids, scores, finished):
        del tokens, state, ids, scores
        return tf.logical_and(t < limit, tf.logical_not(tf.reduce_all(finished)))

    _, _, _, ids, scores, _ = tf.while_loop(
        cond,
        body,
        [
            tf.constant(0),
            tf.fill([batch_size], start_id),
            initial_state,
            tf.fill([batch_size, max_steps], stop_id),
            tf.zeros([batch_size]),
            tf.zeros([batch_size], tf.bool),
        ],
    )
    ids, lengths = cut_at_stop(ids, stop_id)
    return {"ids": ids, "lengths": lengths, "scores": scores}

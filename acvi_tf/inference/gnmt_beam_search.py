"""The beam search of tensorflow/nmt: ``tf.contrib.seq2seq.BeamSearchDecoder``'s algorithm.

tensorflow/nmt decodes with ``BeamSearchDecoder`` (``tfa.seq2seq`` in TF2), which differs
from See et al.'s search in ``acvi_tf.inference.decoding``: finished hypotheses stay in the beam,
extended by [STOP] at no cost, and compete at every step with the live ones on the
length-penalised score; the answer is the best of the final beam. In detail, per input:

* the beam starts with one hypothesis (the others are finished with log-probability
  ``-inf``); each step every hypothesis proposes every token;
* a finished hypothesis proposes only [STOP], with log-probability 0, and its length
  stays; a live one adds 1 to its length unless the token is [STOP];
* the ``beam_size`` candidates with the best ``total / ((5 + length) / 6) ** alpha``
  (Wu et al. 2016's length penalty; 1 when ``alpha`` is 0) form the new beam, ties to
  the lower candidate index (hypothesis-major, token-minor), as ``tf.math.top_k`` does;
  a kept hypothesis's stored length counts its [STOP], the score above does not;
* the search stops when every hypothesis of every input is finished, or after the step
  limit; the answer is the first hypothesis of the last beam.

As in tensorflow/nmt, an input's answer can depend on the rest of its batch: while other
inputs are still searching, its finished hypotheses are scored again at every step with
their stored length, which counts [STOP], so the order of two finished hypotheses can
change after the step at which the input alone would have stopped.
"""

from typing import Any, Callable, Dict, Optional, Tuple, Union

import tensorflow as tf

from acvi_tf.inference import decoding


def gnmt_beam_search(
    step_fn: Callable[[tf.Tensor, Any, tf.Tensor], Tuple[tf.Tensor, Any, Dict[str, tf.Tensor]]],
    initial_state: Any,
    batch_size: Union[tf.Tensor, int],
    beam_size: int,
    max_steps: Union[tf.Tensor, int],
    start_id: int,
    stop_id: int,
    alpha: Union[tf.Tensor, float] = 0.0,
    step_limit: Optional[Union[tf.Tensor, int]] = None,
) -> Dict[str, tf.Tensor]:
    """Decodes ``batch_size`` inputs as tensorflow/nmt's beam search does, in one graph.

    Args:
      step_fn: ``(tokens [B*K] int32, state, step) -> (log_probs [B*K, V], state,
        extras)``, as for ``decoding.beam_search`` (``extras`` are ignored).
      initial_state: nest of [B, ...] tensors, tiled to the beam here.
      batch_size: B, the number of inputs (a Python int or scalar tensor).
      beam_size: K.
      max_steps: the width of the returned ids (a bound on the steps).
      start_id, stop_id: the [START] and [STOP] ids.
      alpha: the length penalty weight (tensorflow/nmt's ``length_penalty_weight``).
      step_limit: stop after this many steps (default and at most ``max_steps``).

    Returns:
      A dict: ``ids`` [B, max_steps] (the answer, cut before its first [STOP] and padded
      with ``stop_id``), ``lengths`` [B] and ``scores`` [B] (length-penalised).
    """
    k = beam_size
    batch = batch_size
    first = tf.range(k)[tf.newaxis] == 0
    loop_vars = dict(
        step=tf.constant(0),
        seq=tf.fill([batch, k, max_steps], stop_id),
        log_probs=tf.where(tf.tile(first, [batch, 1]), 0.0, float("-inf")),
        lengths=tf.zeros([batch, k], tf.int32),
        finished=tf.tile(tf.logical_not(first), [batch, 1]),
        scores=tf.zeros([batch, k]),
        state=decoding.tile_beam(initial_state, k),
    )

    def body(v):
        t = v["step"]
        last = decoding.last_tokens(v["seq"], t, start_id)
        log_probs, new_state, _ = step_fn(tf.reshape(last, [-1]), v["state"], t)
        vocab = tf.shape(log_probs)[-1]
        log_probs = tf.reshape(tf.cast(log_probs, tf.float32), [batch, k, vocab])
        is_stop = tf.equal(tf.range(vocab), stop_id)
        finished = v["finished"][:, :, tf.newaxis]
        stop_only = tf.where(is_stop, 0.0, tf.float32.min)
        total = v["log_probs"][:, :, tf.newaxis] + tf.where(finished, stop_only, log_probs)
        grows = tf.logical_and(tf.logical_not(finished), tf.logical_not(is_stop))
        lengths = v["lengths"][:, :, tf.newaxis] + tf.cast(grows, tf.int32)
        scores = total / length_penalty(lengths, alpha)
        top_scores, top = tf.math.top_k(tf.reshape(scores, [batch, k * vocab]), k)
        parents, tokens = top // vocab, top % vocab
        was_finished = tf.gather(v["finished"], parents, batch_dims=1)
        seq = tf.gather(v["seq"], parents, batch_dims=1)
        return [
            dict(
                step=t + 1,
                seq=decoding.write_step(seq, t, tokens),
                log_probs=tf.gather(tf.reshape(total, [batch, k * vocab]), top, batch_dims=1),
                lengths=(
                    tf.gather(v["lengths"], parents, batch_dims=1)
                    + tf.cast(tf.logical_not(was_finished), tf.int32)
                ),
                finished=tf.logical_or(was_finished, tf.equal(tokens, stop_id)),
                scores=top_scores,
                state=decoding.gather_rows(new_state, decoding.parent_rows(parents, k)),
            )
        ]

    limit = max_steps if step_limit is None else tf.minimum(step_limit, max_steps)

    def cond(v):
        return tf.logical_and(v["step"] < limit, tf.logical_not(tf.reduce_all(v["finished"])))

    final = tf.while_loop(cond, body, [loop_vars])[0]
    ids, lengths = decoding.cut_at_stop(final["seq"][:, 0], stop_id)
    return dict(ids=ids, lengths=lengths, scores=final["scores"][:, 0])


def length_penalty(lengths: tf.Tensor, alpha: Union[tf.Tensor, float]) -> Union[tf.Tensor, float]:
    """Wu et al. (2016)'s ``((5 + length) / 6) ** alpha``; exactly 1 for a static 0."""
    if isinstance(alpha, (int, float)) and alpha == 0:
        return 1.0
    return tf.pow((5.0 + tf.cast(lengths, tf.float32)) / 6.0, alpha)

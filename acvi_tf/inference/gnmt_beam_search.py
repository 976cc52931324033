"""The beam search of tensorflow/nmt: ``tf.contrib.seq2seq.BeamSearchDecoder``'s algorithm.

tensorflow/nmt decodes with ``BeamSearchDecoder`` (``tfa.seq2seq`` in TF2), which differs
from See et al.'s search in ``acvi_tf.inference.beam_search``: finished hypotheses stay in the beam,
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

from typing import Any, Callable, Dict, NamedTuple, Tuple, Union

import tensorflow as tf

from acvi_tf.inference.search import SearchSettings, cut_at_stop, search, write_step


def gnmt_beam_search(
    step_fn: Callable[[tf.Tensor, Any, tf.Tensor], Tuple[tf.Tensor, Any, Dict[str, tf.Tensor]]],
    initial_state: Any,
    batch_size: Union[tf.Tensor, int],
    settings: SearchSettings,
) -> Dict[str, tf.Tensor]:
    """Decodes ``batch_size`` inputs as tensorflow/nmt's beam search does, in one graph.

    Args:
      step_fn: ``(tokens [B*K] int32, state, step) -> (log_probs [B*K, V], state,
        extras)``, as for ``beam_search.beam_search`` (``extras`` are ignored).
      initial_state: nest of [B, ...] tensors, tiled to the beam here.
      batch_size: B, the number of inputs (a Python int or scalar tensor).
      settings: the search's; it reads ``beam_size``, ``max_steps`` (the width of the
        returned ids, a bound on the steps), ``start_id``, ``stop_id``, ``gnmt_alpha``
        (tensorflow/nmt's ``length_penalty_weight``) and ``step_limit``.

    Raises:
      ValueError: ``settings`` asks to record extras or to shrink the batch.

    Returns:
      A dict: ``ids`` [B, max_steps] (the answer, cut before its first [STOP] and padded
      with ``stop_id``), ``lengths`` [B] and ``scores`` [B] (length-penalised).
    """
    return search(GNMTStrategy(settings), step_fn, initial_state, batch_size)


class GNMTBeam(NamedTuple):
    """tensorflow/nmt's search variables, [B, K, ...] per hypothesis: its tokens ``seq``
    [B, K, T], total log-probability, length (counting its [STOP]), whether it is
    finished and its length-penalised score; and ``done`` [B]."""

    seq: tf.Tensor
    log_probs: tf.Tensor
    lengths: tf.Tensor
    finished: tf.Tensor
    scores: tf.Tensor
    done: tf.Tensor


class GNMTStrategy:
    """tensorflow/nmt's selection (``search.SearchStrategy``): every hypothesis proposes
    every token, finished ones only [STOP] at no cost; the ``beam_size`` best on the
    length-penalised score form the new beam; an input is done when its whole beam is
    finished, and its answer is the first hypothesis of the beam.

    Args:
      settings: the search's; it reads ``beam_size``, ``stop_id`` and ``gnmt_alpha``
        (the length penalty weight) beside what the driver reads.

    Raises:
      ValueError: ``settings`` asks to record extras or to shrink the batch.
    """

    def __init__(self, settings: SearchSettings) -> None:
        if settings.record_extras or settings.shrink:
            raise ValueError(
                "tensorflow/nmt's beam search records no extras and keeps finished inputs in "
                "the loop: give it settings with record_extras=False and shrink=False"
            )
        self.settings = settings

    def initial(self, batch: Union[tf.Tensor, int], extras: Dict[str, tf.Tensor]) -> GNMTBeam:
        """One live hypothesis per input, the others finished at ``-inf``
        (``SearchStrategy.initial``; ``extras`` are not recorded)."""
        del extras
        k = self.settings.beam_size
        first = tf.range(k)[tf.newaxis] == 0
        return GNMTBeam(
            seq=tf.fill([batch, k, self.settings.max_steps], self.settings.stop_id),
            log_probs=tf.where(tf.tile(first, [batch, 1]), 0.0, float("-inf")),
            lengths=tf.zeros([batch, k], tf.int32),
            finished=tf.tile(tf.logical_not(first), [batch, 1]),
            scores=tf.zeros([batch, k]),
            done=tf.zeros([batch], tf.bool),
        )

    def select(
        self, v: GNMTBeam, scores: tf.Tensor, extras: Dict[str, tf.Tensor], t: tf.Tensor
    ) -> Tuple[tf.Tensor, GNMTBeam]:
        """The K best candidates on the length-penalised score (``SearchStrategy.select``);
        a done input's finished hypotheses go on being scored, as in tensorflow/nmt."""
        del extras
        k, stop_id = self.settings.beam_size, self.settings.stop_id
        batch = tf.shape(v.done)[0]
        vocab = tf.shape(scores)[-1]
        log_probs = tf.reshape(tf.cast(scores, tf.float32), [batch, k, vocab])
        is_stop = tf.equal(tf.range(vocab), stop_id)
        finished = v.finished[:, :, tf.newaxis]
        stop_only = tf.where(is_stop, 0.0, tf.float32.min)
        total = v.log_probs[:, :, tf.newaxis] + tf.where(finished, stop_only, log_probs)
        grows = tf.logical_and(tf.logical_not(finished), tf.logical_not(is_stop))
        lengths = v.lengths[:, :, tf.newaxis] + tf.cast(grows, tf.int32)
        penalised = total / length_penalty(lengths, self.settings.gnmt_alpha)
        top_scores, top = tf.math.top_k(tf.reshape(penalised, [batch, k * vocab]), k)
        parents, tokens = top // vocab, top % vocab
        was_finished = tf.gather(v.finished, parents, batch_dims=1)
        now_finished = tf.logical_or(was_finished, tf.equal(tokens, stop_id))
        new = GNMTBeam(
            seq=write_step(tf.gather(v.seq, parents, batch_dims=1), t, tokens),
            log_probs=tf.gather(tf.reshape(total, [batch, k * vocab]), top, batch_dims=1),
            lengths=(
                tf.gather(v.lengths, parents, batch_dims=1)
                + tf.cast(tf.logical_not(was_finished), tf.int32)
            ),
            finished=now_finished,
            scores=top_scores,
            done=tf.reduce_all(now_finished, axis=1),
        )
        return parents, new

    def result(self, v: GNMTBeam, t: tf.Tensor) -> Dict[str, tf.Tensor]:
        """The first hypothesis of the beam (``SearchStrategy.result``)."""
        del t
        ids, lengths = cut_at_stop(v.seq[:, 0], self.settings.stop_id)
        return dict(ids=ids, lengths=lengths, scores=v.scores[:, 0])


def length_penalty(lengths: tf.Tensor, alpha: Union[tf.Tensor, float]) -> Union[tf.Tensor, float]:
    """Wu et al. (2016)'s ``((5 + length) / 6) ** alpha``; exactly 1 for a static 0."""
    if isinstance(alpha, (int, float)) and alpha == 0:
        return 1.0
    return tf.pow((5.0 + tf.cast(lengths, tf.float32)) / 6.0, alpha)

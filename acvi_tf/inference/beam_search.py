"""See et al.'s beam search (``SeeStrategy``) on ``search.search``, the driver.

``beam_search`` reproduces See et al.'s ``beam_search.py`` for many inputs at once inside
one ``tf.while_loop``:

* each live hypothesis proposes its ``2 * beam_size`` most likely next tokens (at step 0
  only the first hypothesis exists);
* all candidates are ranked by log-probability (within a step every candidate has the
  same length, so this is the original's ranking by average log-probability) and walked
  in order: a candidate ending in ``stop_id`` becomes a result if at least ``min_steps``
  steps have passed and is dropped otherwise; others fill the new beam; the walk stops
  when the beam holds ``beam_size`` hypotheses or ``beam_size`` results exist;
* an input is finished when it has ``beam_size`` results or after ``max_steps`` steps;
  the answer is the result with the best normalised score, or, if none finished, the
  best live hypothesis.

Ties are broken as Python's stable sort breaks them in the original (lower candidate
index first), so batched and one-at-a-time decoding give identical outputs.
Normalisation (``length_normalization``): ``"average"`` (the original: total log-prob
over the number of tokens including [START]), ``"gnmt"`` (Wu et al. 2016: over
``((5 + length) / 6) ** alpha``), or ``"none"``.
"""

from typing import Any, Callable, Dict, NamedTuple, Tuple, Union

import tensorflow as tf

from acvi_tf.inference.search import (
    SearchSettings,
    cut_at_stop,
    empty_history,
    parent_rows,
    search,
    top_k_log,
    write_step,
)

LENGTH_NORMALIZATIONS = ("average", "gnmt", "none")
_NEG_INF = float("-inf")


def _normalize(total, length, mode, alpha):
    """Score of hypotheses with ``length`` generated tokens (excluding [START])."""
    length = tf.cast(length, tf.float32)
    if mode == "average":
        return total / (length + 1.0)  # the original counts [START] and its 0.0
    if mode == "gnmt":
        return total / tf.pow((5.0 + length) / 6.0, alpha)
    return total


def _where_rows(row_mask, old, new):
    """``old`` where ``row_mask`` [R] is True, else ``new``; both [R, ...]."""
    mask = tf.reshape(row_mask, tf.concat([[-1], tf.ones([tf.rank(new) - 1], tf.int32)], 0))
    return tf.where(mask, old, new)


class SeeBeam(NamedTuple):
    """See's search variables, [B, ...] per input: the live hypotheses (``seq`` [B, K, T],
    their total log-probabilities, which of the K exist, their recorded extras), the
    results (their tokens, normalised scores and extras, how many of the K slots are
    filled) and ``done``."""

    seq: tf.Tensor
    alive_logp: tf.Tensor
    alive_valid: tf.Tensor
    alive_extras: Dict[str, tf.Tensor]
    fin_seq: tf.Tensor
    fin_score: tf.Tensor
    fin_extras: Dict[str, tf.Tensor]
    fin_count: tf.Tensor
    done: tf.Tensor


class SeeStrategy:
    """See et al.'s selection (``beam_search``'s): each live hypothesis proposes its
    ``width`` best tokens; a candidate ending in [STOP] becomes a result (after
    ``min_steps``), the others fill the beam; an input with ``beam_size`` results or no
    live hypothesis is done and frozen; its answer is its best normalised result.

    Args:
      settings: the search's; it reads ``beam_size``, ``stop_id``, ``min_steps``,
        ``length_normalization``, ``gnmt_alpha``, ``candidates_per_hypothesis`` and
        ``probabilities`` beside what the driver reads.

    Raises:
      ValueError: an unknown ``length_normalization``.
    """

    def __init__(self, settings: SearchSettings) -> None:
        if settings.length_normalization not in LENGTH_NORMALIZATIONS:
            raise ValueError(
                "length_normalization must be one of %s, got %r"
                % (LENGTH_NORMALIZATIONS, settings.length_normalization)
            )
        self.settings = settings

    def initial(self, batch: Union[tf.Tensor, int], extras: Dict[str, tf.Tensor]) -> SeeBeam:
        """The beam and the results before the first step (``SearchStrategy.initial``)."""
        k, max_steps, stop_id = (
            self.settings.beam_size,
            self.settings.max_steps,
            self.settings.stop_id,
        )
        empty_extras = empty_history(batch, k, max_steps, extras)
        return SeeBeam(
            seq=tf.fill([batch, k, max_steps], stop_id),
            alive_logp=tf.zeros([batch, k]),
            alive_valid=tf.tile(tf.range(k)[tf.newaxis] == 0, [batch, 1]),
            alive_extras=empty_extras,
            fin_seq=tf.fill([batch, k, max_steps], stop_id),
            fin_score=tf.fill([batch, k], _NEG_INF),
            fin_extras=empty_extras,
            fin_count=tf.zeros([batch], tf.int32),
            done=tf.zeros([batch], tf.bool),
        )

    def select(
        self, v: SeeBeam, scores: tf.Tensor, extras: Dict[str, tf.Tensor], t: tf.Tensor
    ) -> Tuple[tf.Tensor, SeeBeam]:
        """See's walk over the step's candidates (``SearchStrategy.select``); a done
        input's variables stay as they were."""
        settings = self.settings
        k, stop_id, normalization = (
            settings.beam_size,
            settings.stop_id,
            settings.length_normalization,
        )
        batch = tf.shape(v.done)[0]
        width = settings.candidates_per_hypothesis or 2 * k
        if scores.shape[-1] is not None:
            width = min(width, scores.shape[-1])
        top_logp, top_ids = top_k_log(scores, width, settings.probabilities)
        total = v.alive_logp[:, :, tf.newaxis] + tf.reshape(top_logp, [batch, k, width])
        total = tf.where(v.alive_valid[:, :, tf.newaxis], total, _NEG_INF)
        # All candidates of an input, best first; top_k keeps the lower index on ties,
        # as the original's stable sort keeps the order hypothesis-major, token-minor.
        cand_total, order = tf.math.top_k(tf.reshape(total, [batch, k * width]), k * width)
        cand_ids = tf.gather(tf.reshape(top_ids, [batch, k * width]), order, batch_dims=1)
        valid = cand_total > _NEG_INF
        is_stop = tf.equal(cand_ids, stop_id)
        live = tf.logical_and(valid, tf.logical_not(is_stop))
        stop_ok = tf.logical_and(tf.logical_and(valid, is_stop), t >= settings.min_steps)
        # The walk looks at candidate i while fewer than K live hypotheses and fewer
        # than K results (counting earlier steps') were collected before it.
        live_before = tf.cumsum(tf.cast(live, tf.int32), axis=1, exclusive=True)
        stops_before = tf.cumsum(tf.cast(stop_ok, tf.int32), axis=1, exclusive=True)
        walked = tf.logical_and(live_before < k, v.fin_count[:, tf.newaxis] + stops_before < k)

        def first_k(mask):
            """Candidate indices [B, K] of the first K True entries, and which exist."""
            positions = tf.range(k * width)[tf.newaxis]
            _, indices = tf.math.top_k(tf.where(mask, -positions, -2 * k * width), k=k)
            return indices, tf.gather(mask, indices, batch_dims=1)

        def extend(indices):
            """Parents [B, K], sequences, extras and totals of candidates [B, K]."""
            parents = tf.gather(order // width, indices, batch_dims=1)
            rows = parent_rows(parents, k)

            def from_parent(history):
                flat = tf.reshape(history, tf.concat([[batch * k], tf.shape(history)[2:]], 0))
                return tf.reshape(tf.gather(flat, rows), tf.shape(history))

            seq = write_step(from_parent(v.seq), t, tf.gather(cand_ids, indices, batch_dims=1))
            extra = {
                name: write_step(
                    from_parent(v.alive_extras[name]),
                    t,
                    tf.reshape(
                        tf.gather(value, rows), tf.concat([[batch, k], tf.shape(value)[1:]], 0)
                    ),
                )
                for name, value in extras.items()
            }
            return parents, seq, extra, tf.gather(cand_total, indices, batch_dims=1)

        live_idx, live_valid = first_k(tf.logical_and(live, walked))
        parents, alive_seq, alive_extras, alive_logp = extend(live_idx)

        # Results fill slots fin_count, fin_count + 1, ... of each input's K slots:
        # slot j takes the (j - fin_count)-th new result, if there is one.
        stop_idx, stop_valid = first_k(tf.logical_and(stop_ok, walked))
        _, stop_seq, stop_extras, stop_total = extend(stop_idx)
        source = tf.maximum(tf.range(k)[tf.newaxis] - v.fin_count[:, tf.newaxis], 0)
        new_result = tf.logical_and(
            tf.range(k)[tf.newaxis] >= v.fin_count[:, tf.newaxis],
            tf.gather(stop_valid, source, batch_dims=1),
        )

        def place(old, new):
            moved = tf.gather(new, source, batch_dims=1)
            mask = tf.reshape(
                new_result,
                tf.concat([tf.shape(new_result), tf.ones([tf.rank(old) - 2], tf.int32)], 0),
            )
            return tf.where(mask, moved, old)

        score = _normalize(stop_total, t + 1, normalization, settings.gnmt_alpha)
        fin_count = v.fin_count + tf.reduce_sum(tf.cast(new_result, tf.int32), axis=1)
        done = tf.logical_or(fin_count >= k, tf.logical_not(tf.reduce_any(live_valid, 1)))
        keep = v.done
        new = SeeBeam(
            seq=_where_rows(keep, v.seq, alive_seq),
            alive_logp=_where_rows(keep, v.alive_logp, alive_logp),
            alive_valid=_where_rows(keep, v.alive_valid, live_valid),
            alive_extras={
                n: _where_rows(keep, v.alive_extras[n], alive_extras[n]) for n in alive_extras
            },
            fin_seq=_where_rows(keep, v.fin_seq, place(v.fin_seq, stop_seq)),
            fin_score=_where_rows(keep, v.fin_score, place(v.fin_score, score)),
            fin_extras={
                n: _where_rows(keep, v.fin_extras[n], place(v.fin_extras[n], stop_extras[n]))
                for n in stop_extras
            },
            fin_count=_where_rows(keep, v.fin_count, fin_count),
            done=tf.logical_or(keep, done),
        )
        return parents, new

    def result(self, v: SeeBeam, t: tf.Tensor) -> Dict[str, tf.Tensor]:
        """The best result per input, or its best live hypothesis where none finished
        (``SearchStrategy.result``)."""
        settings = self.settings
        has_results = v.fin_count > 0
        alive_score = tf.where(
            v.alive_valid,
            _normalize(v.alive_logp, t, settings.length_normalization, settings.gnmt_alpha),
            _NEG_INF,
        )
        scores = tf.where(has_results[:, tf.newaxis], v.fin_score, alive_score)
        best = tf.argmax(scores, axis=1, output_type=tf.int32)

        def pick(finished, alive):
            chosen = _where_rows(has_results, finished, alive)
            return tf.gather(chosen, best, batch_dims=1)

        ids, lengths = cut_at_stop(pick(v.fin_seq, v.seq), settings.stop_id)
        out = {"ids": ids, "lengths": lengths, "scores": tf.gather(scores, best, batch_dims=1)}
        for name in v.fin_extras:
            out[name] = pick(v.fin_extras[name], v.alive_extras[name])
        return out


def beam_search(
    step_fn: Callable[[tf.Tensor, Any, tf.Tensor], Tuple[tf.Tensor, Any, Dict[str, tf.Tensor]]],
    initial_state: Any,
    batch_size: Union[tf.Tensor, int],
    settings: SearchSettings,
    constants: Any = None,
) -> Dict[str, tf.Tensor]:
    """Decodes ``batch_size`` inputs with See et al.'s beam search, all in one graph.

    Args:
      step_fn, initial_state, batch_size, constants: as ``search.search``'s (the step's
        scores [B*K, W], W the vocabulary, or the extended one).
      settings: the search's (``SearchSettings``); ``shrink`` needs ``constants``.

    Returns:
      A dict: ``ids`` [B, max_steps] (generated tokens, cut before the first stop and
      padded with ``stop_id``), ``lengths`` [B], ``scores`` [B] (normalised), and each
      extra as [B, max_steps, ...] for the chosen hypothesis.
    """
    return search(SeeStrategy(settings), step_fn, initial_state, batch_size, constants)

"""Greedy decoding (``GreedyStrategy``) on ``search.search``, the driver: the most likely
token at every step, for many inputs in one graph."""

from typing import Any, Callable, Dict, NamedTuple, Tuple, Union

import tensorflow as tf

from acvi_tf.inference.search import (
    SearchSettings,
    cut_at_stop,
    empty_history,
    search,
    top_k_log,
    write_step,
)


class Path(NamedTuple):
    """The search variables of a strategy that keeps one hypothesis per input: its
    tokens ``seq`` [B, 1, T], total log-probability ``scores`` [B], recorded extras
    [B, 1, T, ...] and ``done`` [B] (it emitted [STOP])."""

    seq: tf.Tensor
    scores: tf.Tensor
    extras: Dict[str, tf.Tensor]
    done: tf.Tensor


class GreedyStrategy:
    """One hypothesis per input, extended by the token ``choose`` picks (here the most
    likely); an input is done at its first [STOP] and frozen from then on, so the
    driver may shrink the batch. ``scores`` add the chosen tokens' log-probabilities
    up to (not including) [STOP].

    Args:
      settings: the search's; it reads ``stop_id`` and ``probabilities`` beside what the
        driver reads (its ``beam_size`` must be 1).

    Raises:
      ValueError: ``settings.beam_size`` is not 1.
    """

    def __init__(self, settings: SearchSettings) -> None:
        if settings.beam_size != 1:
            raise ValueError(
                "%s keeps one hypothesis per input: give it settings with beam_size=1, got %d"
                % (type(self).__name__, settings.beam_size)
            )
        self.settings = settings

    def choose(self, scores: tf.Tensor, t: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """The next token of each row and its log-probability: the argmax.

        Args:
          scores: the step's scores [B, V] (probabilities with ``settings.probabilities``).
          t: the step.

        Returns:
          ``(log_probs [B] float32, tokens [B] int32)``.
        """
        del t
        log_probs, tokens = top_k_log(scores, 1, self.settings.probabilities)
        return log_probs[:, 0], tokens[:, 0]

    def initial(self, batch: Union[tf.Tensor, int], extras: Dict[str, tf.Tensor]) -> Path:
        """An empty path per input (``SearchStrategy.initial``)."""
        settings = self.settings
        return Path(
            seq=tf.fill([batch, 1, settings.max_steps], settings.stop_id),
            scores=tf.zeros([batch]),
            extras=empty_history(batch, 1, settings.max_steps, extras),
            done=tf.zeros([batch], tf.bool),
        )

    def select(
        self, v: Path, scores: tf.Tensor, extras: Dict[str, tf.Tensor], t: tf.Tensor
    ) -> Tuple[tf.Tensor, Path]:
        """Each path extended by ``choose``'s token; a done input's stays as it was
        (``SearchStrategy.select``)."""
        stop_id = self.settings.stop_id
        log_probs, tokens = self.choose(scores, t)
        tokens = tf.where(v.done, stop_id, tokens)
        ends = tf.logical_or(v.done, tf.equal(tokens, stop_id))
        new = Path(
            seq=write_step(v.seq, t, tokens[:, tf.newaxis]),
            scores=v.scores + tf.where(ends, 0.0, log_probs),
            extras={
                name: tf.where(
                    tf.reshape(v.done, [-1] + [1] * (value.shape.rank + 1)),
                    v.extras[name],
                    write_step(v.extras[name], t, value[:, tf.newaxis]),
                )
                for name, value in extras.items()
            },
            done=ends,
        )
        return tf.zeros([tf.shape(tokens)[0], 1], tf.int32), new

    def result(self, v: Path, t: tf.Tensor) -> Dict[str, tf.Tensor]:
        """Each input's path (``SearchStrategy.result``)."""
        del t
        ids, lengths = cut_at_stop(v.seq[:, 0], self.settings.stop_id)
        out = {"ids": ids, "lengths": lengths, "scores": v.scores}
        out.update({name: history[:, 0] for name, history in v.extras.items()})
        return out


def greedy_search(
    step_fn: Callable[..., Tuple[tf.Tensor, Any, Dict[str, tf.Tensor]]],
    initial_state: Any,
    batch_size: Union[tf.Tensor, int],
    settings: SearchSettings,
    constants: Any = None,
) -> Dict[str, tf.Tensor]:
    """Greedy decoding with the same ``step_fn`` contract as ``beam_search``; it reads
    ``settings``' ``max_steps``, ``start_id``, ``stop_id``, ``probabilities``,
    ``record_extras``, ``step_limit`` and ``shrink``.

    Returns:
      ``ids`` [B, max_steps] (cut before the first stop, padded with ``stop_id``),
      ``lengths`` [B], ``scores`` [B] (total log-probability of the kept tokens) and the
      recorded extras [B, max_steps, ...].
    """
    return search(GreedyStrategy(settings), step_fn, initial_state, batch_size, constants)

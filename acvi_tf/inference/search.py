"""The search driver every decoding strategy runs on: the settings a search decodes with
(``SearchSettings``), what a strategy implements (``SearchStrategy``), the helpers its
histories use, and ``search``, one ``tf.while_loop`` over any step function.

The strategies, each in a module of its own, import this one: See et al.'s beam search
(``beam_search``), tensorflow/nmt's (``gnmt_beam_search``), greedy decoding
(``greedy_search``) and sampling (``sampling``).
"""

import dataclasses
from typing import Any, Callable, Dict, NamedTuple, Optional, Protocol, Tuple, Union

import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """What a search decodes with, beside the model's step, its state and the inputs.

    Attributes:
      max_steps: the largest number of generated tokens, the width of the returned ids
        (a Python int or scalar tensor; under XLA it sizes buffers, so it must follow
        from shapes).
      start_id, stop_id: the [START] and [STOP] ids.
      beam_size: K, the hypotheses kept per input (greedy decoding and sampling keep
        one).
      min_steps: a hypothesis that emits ``stop_id`` at step t < ``min_steps`` is
        dropped (See's search: the original's ``min_dec_steps``).
      length_normalization: See's ranking of results: ``"average"``, ``"gnmt"`` or
        ``"none"``.
      gnmt_alpha: alpha of the GNMT length penalty (See's search with ``"gnmt"``;
        tensorflow/nmt's search's ``length_penalty_weight``).
      candidates_per_hypothesis: tokens each hypothesis proposes in See's search
        (default 2K, at most the vocabulary size).
      probabilities: the step returns probabilities; the log is taken of the
        candidates only, as the original does (cheaper than a log over the vocabulary).
      record_extras: keep the history of the step's ``extras`` (a copy of them per
        step).
      step_limit: stop after this many steps (default ``max_steps``; at most
        ``max_steps``); the outputs keep ``max_steps`` columns and are those of
        ``max_steps=step_limit``, and it may depend on the data.
      shrink: drop the rows of finished inputs from the loop (with the step's
        constants): a batch costs what its live inputs cost, with the same outputs for a
        strategy that freezes a finished input; the row count changes from step to
        step, which XLA cannot compile.
      temperature: sampling's softmax temperature (the log-probabilities are divided
        by it before a token is drawn).
      seed: sampling's seed: step t of a search draws with the stateless seed
        ``(seed, t)``, so the same inputs in the same batches give the same samples
        (eagerly and in a graph; XLA draws others).
    """

    max_steps: Union[tf.Tensor, int]
    start_id: int
    stop_id: int
    beam_size: int = 1
    min_steps: int = 0
    length_normalization: str = "average"
    gnmt_alpha: Union[tf.Tensor, float] = 0.6
    candidates_per_hypothesis: Optional[int] = None
    probabilities: bool = False
    record_extras: bool = False
    step_limit: Optional[Union[tf.Tensor, int]] = None
    shrink: bool = False
    temperature: float = 1.0
    seed: int = 0


class SearchStrategy(Protocol):
    """How a search scores and selects its hypotheses: what See's beam search,
    tensorflow/nmt's, greedy decoding and sampling do differently. ``search`` runs any
    of them over a step function.

    Attributes:
      settings: the search's settings (the driver reads ``beam_size``, ``max_steps``,
        ``start_id``, ``record_extras``, ``step_limit`` and ``shrink``).
    """

    settings: SearchSettings

    def initial(self, batch: Union[tf.Tensor, int], extras: Dict[str, tf.Tensor]) -> Any:
        """The search variables of ``batch`` inputs before the first step.

        Args:
          batch: B.
          extras: [B*K, ...] tensors shaped as a step's recorded extras ({} unless
            recorded).

        Returns:
          A ``NamedTuple`` of [B, ...] tensors with the fields ``seq`` [B, K, T] (the
          hypotheses' tokens, what each feeds the next step, T = ``max_steps``) and
          ``done`` [B] (the input's search ended).
        """

    def select(
        self, v: Any, scores: tf.Tensor, extras: Dict[str, tf.Tensor], t: tf.Tensor
    ) -> Tuple[tf.Tensor, Any]:
        """One step's new hypotheses.

        Args:
          v: the search variables.
          scores: the step's scores [B*K, V].
          extras: the step's recorded extras ({} unless recorded).
          t: the step.

        Returns:
          ``(parents, v)``: the hypothesis [B, K] (an index into each input's K) each
          new hypothesis extends, and the new variables.
        """

    def result(self, v: Any, t: tf.Tensor) -> Dict[str, tf.Tensor]:
        """The answers after ``t`` steps: ``ids`` [B, T] (cut before the first stop),
        ``lengths`` [B], ``scores`` [B] and the recorded extras [B, T, ...]."""


def tile_beam(structure: Any, beam_size: int) -> Any:
    """Repeats every row of a nest of [B, ...] tensors ``beam_size`` times: [B*K, ...]."""
    return tf.nest.map_structure(
        lambda t: None if t is None else tf.repeat(t, beam_size, axis=0), structure
    )


def last_tokens(seq: tf.Tensor, t: tf.Tensor, start_id: int) -> tf.Tensor:
    """The tokens [B, K] the hypotheses ``seq`` [B, K, T] end in before step ``t``
    (``start_id`` at step 0): what a search feeds its step."""
    return tf.where(t > 0, tf.gather(seq, tf.maximum(t - 1, 0), axis=2), start_id)


def parent_rows(parents: tf.Tensor, beam_size: int) -> tf.Tensor:
    """The flat rows [B*K] of the hypotheses that ``parents`` [B, K] (an index into each
    input's K hypotheses) name, in a beam's [B*K, ...] state."""
    batch = tf.shape(parents)[0]
    return tf.reshape(parents + tf.range(batch)[:, tf.newaxis] * beam_size, [-1])


def gather_rows(structure: Any, rows: tf.Tensor) -> Any:
    """Every [R, ...] tensor of a nest at ``rows`` (a beam's state after a step)."""
    return tf.nest.map_structure(lambda x: tf.gather(x, rows), structure)


def write_step(history: tf.Tensor, t: tf.Tensor, value: tf.Tensor) -> tf.Tensor:
    """``history`` [B, K, T, ...] with entry ``t`` replaced by ``value`` [B, K, ...]."""
    steps = tf.shape(history)[2]
    at_t = tf.reshape(
        tf.equal(tf.range(steps), t),
        tf.concat([[1, 1, -1], tf.ones([tf.rank(history) - 3], tf.int32)], 0),
    )
    return tf.where(at_t, value[:, :, tf.newaxis], history)


def empty_history(
    batch: Union[tf.Tensor, int], beam_size: int, max_steps: Union[tf.Tensor, int], extras: Any
) -> Dict[str, tf.Tensor]:
    """Zero histories [B, K, T, ...] of a step's recorded ``extras`` ([B*K, ...] each)."""
    return {
        name: tf.zeros(tf.concat([[batch, beam_size, max_steps], tf.shape(x)[1:]], 0), x.dtype)
        for name, x in extras.items()
    }


def cut_at_stop(ids: tf.Tensor, stop_id: int) -> Tuple[tf.Tensor, tf.Tensor]:
    """``(ids, lengths)``: ``ids`` [B, T] with everything from the first ``stop_id`` on
    set to ``stop_id``, and the number of tokens before it ([B]; T where there is none)."""
    steps = tf.shape(ids)[1]
    is_stop = tf.equal(ids, stop_id)
    lengths = tf.where(
        tf.reduce_any(is_stop, axis=1),
        tf.argmax(tf.cast(is_stop, tf.int32), axis=1, output_type=tf.int32),
        steps,
    )
    return tf.where(tf.range(steps)[tf.newaxis] < lengths[:, tf.newaxis], ids, stop_id), lengths


def top_k_log(
    scores: tf.Tensor, k: Union[tf.Tensor, int], probabilities: bool
) -> Tuple[tf.Tensor, tf.Tensor]:
    """Top-k of a step's scores as log-probabilities (log taken of the k kept only)."""
    values, ids = tf.math.top_k(tf.cast(scores, tf.float32), k=k)
    return (tf.math.log(values) if probabilities else values), ids


class _Loop(NamedTuple):
    """The driver's loop variables; ``constants``, ``index`` and ``results`` are used
    with ``shrink`` only (the live rows' constants, the live inputs' original indices and
    the finished inputs' results)."""

    step: tf.Tensor
    state: Any
    search: Any
    constants: Any = ()
    index: Any = ()
    results: Any = ()


def search(
    strategy: SearchStrategy,
    step_fn: Callable[..., Tuple[tf.Tensor, Any, Dict[str, tf.Tensor]]],
    initial_state: Any,
    batch_size: Union[tf.Tensor, int],
    constants: Any = None,
) -> Dict[str, tf.Tensor]:
    """The search driver: a ``strategy`` over a step, in one ``tf.while_loop``.

    Each step feeds every hypothesis's last token to ``step_fn``, lets the strategy
    choose the new hypotheses, and gathers the state rows of the chosen parents. The
    loop ends after ``settings.step_limit`` steps or when every input is done; the
    strategy's ``result`` gives the outputs.

    Args:
      strategy: the scoring and selection, with its ``settings``; the driver reads
        their ``beam_size``, ``max_steps``, ``start_id``, ``record_extras``,
        ``step_limit`` and ``shrink`` (the outputs stay the same with ``shrink`` only
        with a strategy that freezes a finished input, since an input leaves the loop
        when done).
      step_fn: ``(tokens [B*K] int32, state, step) -> (scores [B*K, V], state,
        extras)``, or ``(tokens, state, step, constants)`` when ``constants`` is given
        (B is then the number of live inputs with ``shrink``). ``scores`` are
        log-probabilities (or probabilities, see ``SearchSettings.probabilities``);
        ``tokens`` are the hypotheses' last tokens as generated (the host maps ids it
        cannot embed, e.g. extended-vocabulary ids to [UNK]); ``state`` is any nest of
        [B*K, ...] tensors; ``extras`` is a dict of [B*K, ...] tensors (e.g. attention),
        recorded at every step for the chosen hypothesis with ``record_extras``.
      initial_state: nest of [B, ...] tensors, tiled to the beam here.
      batch_size: B, the number of inputs (a Python int or scalar tensor).
      constants: optional nest of [B, ...] tensors that the step reads but does not
        change (e.g. the encoder states), tiled to the beam here and passed to
        ``step_fn`` as [B*K, ...] (None entries stay None). Given, the first step, where
        an input's K hypotheses are one, runs on B rows (tokens, state and constants
        [B, ...]) and its outputs are tiled; ``shrink`` needs them.

    Returns:
      ``strategy.result``'s dict.

    Raises:
      ValueError: ``shrink`` without ``constants``.
    """
    settings = strategy.settings
    k, max_steps, start_id = settings.beam_size, settings.max_steps, settings.start_id
    record_extras, shrink = settings.record_extras, settings.shrink
    if shrink and constants is None:
        raise ValueError("shrink needs the step's constants, to drop their finished rows")
    batch = batch_size
    state = tile_beam(initial_state, k)
    const_leaves = tf.nest.flatten(tile_beam(constants, k))
    const_carried = [x for x in const_leaves if x is not None]

    def call_step(tokens, state, t, carried):
        if constants is None:
            return step_fn(tokens, state, t)
        leaves = iter(carried)
        return step_fn(
            tokens,
            state,
            t,
            tf.nest.pack_sequence_as(
                constants, [None if x is None else next(leaves) for x in const_leaves]
            ),
        )

    probe = {}
    if record_extras:  # one probe step gives the extras' shapes (its results are unused)
        _, _, probe = call_step(
            tf.fill([batch * k], start_id), state, tf.constant(0), const_carried
        )
    loop = _Loop(step=tf.constant(0), state=state, search=strategy.initial(batch, probe))
    if shrink:
        loop = loop._replace(
            constants=const_carried,
            index=tf.range(batch),
            results=_empty_results(strategy.result(loop.search, loop.step)),
        )

    def body(v):
        t = v.step
        batch = tf.shape(v.search.done)[0]
        last = last_tokens(v.search.seq, t, start_id)
        carried = v.constants if shrink else const_carried

        def every_row():
            return call_step(tf.reshape(last, [-1]), v.state, t, carried)

        def first_rows():
            """Step 0 on one row per input (its K rows are the same) and tiled."""

            def first(x):
                return x[::k]

            return tile_beam(
                call_step(
                    tf.fill([batch], start_id),
                    tf.nest.map_structure(first, v.state),
                    t,
                    [first(x) for x in carried],
                ),
                k,
            )

        if constants is None:  # the step's own constants have B*K rows
            scores, new_state, extras = every_row()
        else:
            scores, new_state, extras = tf.cond(tf.equal(t, 0), first_rows, every_row)
        parents, found = strategy.select(v.search, scores, extras if record_extras else {}, t)
        new = v._replace(
            step=t + 1, state=gather_rows(new_state, parent_rows(parents, k)), search=found
        )
        if not shrink:
            return [new]
        return [
            tf.cond(
                tf.reduce_any(found.done),
                lambda: _retire(new, k, strategy),
                lambda: new,
            )
        ]

    limit = max_steps if settings.step_limit is None else tf.minimum(settings.step_limit, max_steps)

    def cond(v):
        return tf.logical_and(v.step < limit, tf.logical_not(tf.reduce_all(v.search.done)))

    if not shrink:
        final = tf.while_loop(cond, body, [loop])[0]
        return strategy.result(final.search, final.step)
    invariants = _Loop(
        step=loop.step.shape,
        state=tf.nest.map_structure(lambda x: _any_rows(x.shape), loop.state),
        search=tf.nest.map_structure(lambda x: _any_rows(x.shape), loop.search),
        constants=[_any_rows(x.shape) for x in loop.constants],
        index=_any_rows(loop.index.shape),
        results=tf.nest.map_structure(lambda x: x.shape, loop.results),
    )
    final = tf.while_loop(cond, body, [loop], shape_invariants=[invariants])[0]
    return _store(final.results, final.index, strategy.result(final.search, final.step))


def _any_rows(shape):
    """``shape`` with any number of rows (the first axis)."""
    return tf.TensorShape([None]).concatenate(shape[1:])


def _empty_results(results):
    """Zero outputs shaped as ``results`` (a strategy's before any step)."""
    return tf.nest.map_structure(tf.zeros_like, results)


def _store(results, index, chosen):
    """``results`` with the rows ``index`` [L] replaced by ``chosen`` ([L, ...] each)."""
    return {
        name: tf.tensor_scatter_nd_update(value, index[:, tf.newaxis], chosen[name])
        for name, value in results.items()
    }


def _retire(v, k, strategy):
    """The loop variables of a shrinking search without its finished inputs, whose
    results go to ``v.results``.

    Only for a strategy that freezes a finished input (See's): its result is then the
    same at its last step as after the loop.
    """
    done = v.search.done
    finished = tf.where(done)[:, 0]
    going = tf.where(tf.logical_not(done))[:, 0]
    going_rows = tf.reshape(going[:, tf.newaxis] * k + tf.range(k, dtype=tf.int64), [-1])

    def rows(indices):
        return tf.nest.map_structure(lambda x: tf.gather(x, indices), v.search)

    return v._replace(
        search=rows(going),
        index=tf.gather(v.index, going),
        state=gather_rows(v.state, going_rows),
        constants=[tf.gather(x, going_rows) for x in v.constants],
        results=_store(
            v.results,
            tf.gather(v.index, finished),
            strategy.result(rows(finished), v.step),
        ),
    )

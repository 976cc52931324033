"""Batched, in-graph decoding for the three hosts: the protocol a host model decodes
through (``DecodingModel``, ``model_step``), the search settings (``SearchSettings``),
and ``search``, the beam search driver over any model's step, whose ``BeamStrategy``
scores and selects: See et al.'s in ``beam_search``, tensorflow/nmt's in
``gnmt_beam_search``. Greedy decoding is ``greedy_search``.
"""

import dataclasses
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Union,
    runtime_checkable,
)

import numpy as np
import tensorflow as tf

if TYPE_CHECKING:
    from acvi_tf.contexts.context import ContextLayer


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """What a search decodes with, beside the model's step, its state and the inputs.

    Attributes:
      max_steps: the largest number of generated tokens, the width of the returned ids
        (a Python int or scalar tensor; under XLA it sizes buffers, so it must follow
        from shapes).
      start_id, stop_id: the [START] and [STOP] ids.
      beam_size: K, the hypotheses kept per input (a greedy search keeps one).
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
      shrink: drop the rows of finished inputs from the loop (See's search with the
        step's constants): a batch costs what its live inputs cost, with the same
        outputs; the row count changes from step to step, which XLA cannot compile.
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


@runtime_checkable
class DecodingModel(Protocol):
    """What a host model implements to be decoded: ``start`` once per batch of inputs,
    then ``decode_step`` once per generated token (``model_step`` makes the searches'
    step of it). Every host's ``decode_step`` takes ``(tokens, state, constants)``: what
    else a host needs to decode (the summarizer's article OOV count and coverage
    switch) its ``start`` puts in the constants or the state, as [B, ...] tensors that
    the searches tile, gather and shrink with the rows.

    ``probability_scores`` says what the scores are, and the searches take it as their
    ``probabilities``: log-probabilities over the vocabulary (False: the NMT models and
    the captioner), or probabilities (True: the summarizers, over their extended
    vocabulary), of which the searches take the log of the candidates they keep only,
    as See's beam does. The summarizer cannot give log-probabilities and keep See's
    results bit-exact: float32 log maps distinct small probabilities to one value,
    which changes the order of ties in top-k. What else a step gives (attention,
    ``p_gen``) is in its extras dict. ``context_layer`` is the model's context mechanism
    (soft attention's for the Transformers), whose posterior a decode report shows.
    """

    probability_scores: bool
    context_layer: "ContextLayer"

    def start(self, inputs: Dict[str, tf.Tensor]) -> Tuple[Any, Any]:
        """Encodes a batch.

        Args:
          inputs: the host's input tensors by name (the NMT model's ``src`` and
            ``src_len``, the captioner's ``features`` and ``num_frames``, the
            summarizer's batch).

        Returns:
          ``(constants, state)``: nests of [B, ...] tensors every step reads, and the
          initial decoder state.
        """

    def decode_step(
        self, tokens: tf.Tensor, state: Any, constants: Any
    ) -> Tuple[tf.Tensor, Any, Dict[str, tf.Tensor]]:
        """One step.

        Args:
          tokens: the previous tokens [R].
          state: the decoder state, [R, ...] tensors.
          constants: ``start``'s constants, tiled to R rows.

        Returns:
          ``(scores [R, V], state, extras)``.
        """


# ``ContextLayer.report_posterior``'s values per source position and per decoder step.
POSITION_VALUES = ("sigma",)
STEP_VALUES = ("kl", "scale")


def posterior(model: DecodingModel, constants: Any, attention: tf.Tensor) -> Dict[str, tf.Tensor]:
    """What a decode report shows of a model's context mechanism's posterior for decoded
    sequences: ``model.context_layer.report_posterior`` of their attention on the
    ``prepared`` memory of ``start``'s constants (empty for a model whose constants hold
    none, such as a Transformer).

    Args:
      model: the model.
      constants: ``start``'s constants for the batch (not tiled for a beam).
      attention: the decoded steps' attention [B, T, N] (a search's ``attn``).

    Returns:
      Tensors by name: ``POSITION_VALUES`` [B, N] and ``STEP_VALUES`` [B, T].
    """
    prepared = constants.get("prepared") if isinstance(constants, dict) else None
    if prepared is None:
        return {}
    return model.context_layer.report_posterior(attention, prepared)


def posterior_labels(model: DecodingModel) -> Dict[str, str]:
    """``model.context_layer.report_labels()``, the words for ``posterior``'s values."""
    return model.context_layer.report_labels()


def pad_steps(sequences: Sequence[np.ndarray]) -> np.ndarray:
    """Per-step arrays of several sequences [T_j, N] as one batch [B, max T_j, N] (float32,
    zeros after each sequence's end), e.g. decoded attention for ``posterior``."""
    width = sequences[0].shape[1]
    padded = np.zeros((len(sequences), max(len(x) for x in sequences), width), np.float32)
    for row, values in enumerate(sequences):
        padded[row, : len(values)] = values
    return padded


def example_posterior(found: Dict[str, np.ndarray], length: int) -> Dict[str, np.ndarray]:
    """One sequence's share of ``posterior``'s values (NumPy, its row taken): the
    per-position values whole, the per-step ones cut to the ``length`` decoded steps;
    other entries of ``found`` are left out."""
    picked = {name: found[name] for name in POSITION_VALUES if name in found}
    picked.update({name: found[name][:length] for name in STEP_VALUES if name in found})
    return picked


def model_step(model: DecodingModel, constants: Any = None) -> Callable:
    """The search step of a ``DecodingModel``.

    ``beam_search``, ``greedy_search`` and ``gnmt_beam_search`` take the result, with
    ``probabilities=model.probability_scores``.

    Args:
      model: the model.
      constants: its ``start`` constants (tiled with ``tile_beam`` for a beam); None
        gives a step that takes them as its fourth argument (``beam_search``'s
        ``constants``).

    Returns:
      ``(tokens, state, t) -> (scores, state, extras)``, or ``(tokens, state, t,
      constants) -> ...`` without ``constants``.
    """
    if constants is None:

        def step_with(tokens, state, t, constants):
            del t
            return model.decode_step(tokens, state, constants)

        return step_with

    def step(tokens, state, t):
        del t
        return model.decode_step(tokens, state, constants)

    return step


def tile_beam(structure: Any, beam_size: int) -> Any:
    """Repeats every row of a nest of [B, ...] tensors ``beam_size`` times: [B*K, ...]."""
    return tf.nest.map_structure(
        lambda t: None if t is None else tf.repeat(t, beam_size, axis=0), structure
    )


def last_tokens(seq: tf.Tensor, t: tf.Tensor, start_id: int) -> tf.Tensor:
    """The tokens [B, K] the hypotheses ``seq`` [B, K, T] end in before step ``t``
    (``start_id`` at step 0): what a beam search feeds its step."""
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


class BeamStrategy(Protocol):
    """How a beam search scores and selects its hypotheses: what See's search and
    tensorflow/nmt's do differently. ``search`` runs either over a step function."""

    def initial(
        self, batch: Union[tf.Tensor, int], max_steps: Union[tf.Tensor, int], extras: Any
    ) -> Dict[str, Any]:
        """The search variables of ``batch`` inputs before the first step.

        Args:
          batch: B.
          max_steps: T, the width of the hypotheses' token history.
          extras: a dict of [B*K, ...] tensors shaped as a step's recorded extras.

        Returns:
          A dict of [B, ...] tensors holding ``seq`` [B, K, T] (the hypotheses' tokens,
          what each feeds the next step) and ``done`` [B] (the input's search ended).
        """

    def select(
        self, v: Dict[str, Any], scores: tf.Tensor, extras: Dict[str, tf.Tensor], t: tf.Tensor
    ) -> Tuple[tf.Tensor, Dict[str, Any]]:
        """One step's new beam.

        Args:
          v: the search variables.
          scores: the step's scores [B*K, V].
          extras: the step's recorded extras ({} unless recorded).
          t: the step.

        Returns:
          ``(parents, v)``: the hypothesis [B, K] (an index into each input's K) each
          new hypothesis extends, and the new variables.
        """

    def result(self, v: Dict[str, Any], t: tf.Tensor) -> Dict[str, tf.Tensor]:
        """The answers after ``t`` steps: ``ids`` [B, T] (cut before the first stop),
        ``lengths`` [B], ``scores`` [B] and the recorded extras."""


def search(
    strategy: BeamStrategy,
    step_fn: Callable[..., Tuple[tf.Tensor, Any, Dict[str, tf.Tensor]]],
    initial_state: Any,
    batch_size: Union[tf.Tensor, int],
    settings: SearchSettings,
    constants: Any = None,
) -> Dict[str, tf.Tensor]:
    """The beam search driver: a ``strategy`` over a step, in one ``tf.while_loop``.

    Each step feeds every hypothesis's last token to ``step_fn``, lets the strategy
    choose the new beam, and gathers the state rows of the chosen parents. The loop ends
    after ``settings.step_limit`` steps or when every input is done; the strategy's
    ``result`` gives the outputs.

    Args:
      strategy: the scoring and selection.
      step_fn, initial_state, batch_size, constants: as ``beam_search``'s.
      settings: the search's; it reads ``beam_size``, ``max_steps``, ``start_id``,
        ``record_extras``, ``step_limit`` and ``shrink`` (the outputs stay the same with
        ``shrink`` only with a strategy that freezes a finished input, See's, since an
        input leaves the loop when done).

    Returns:
      ``strategy.result``'s dict.
    """
    beam_size, max_steps, start_id = settings.beam_size, settings.max_steps, settings.start_id
    record_extras, step_limit, shrink = settings.record_extras, settings.step_limit, settings.shrink
    if shrink and constants is None:
        raise ValueError("shrink needs the step's constants, to drop their finished rows")
    k = beam_size
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
    loop_vars = dict(
        step=tf.constant(0), state=state, search=strategy.initial(batch, max_steps, probe)
    )
    if shrink:  # the live inputs' original indices, and the finished inputs' results
        loop_vars.update(
            constants=const_carried,
            index=tf.range(batch),
            results=_empty_results(strategy.result(loop_vars["search"], loop_vars["step"])),
        )

    def body(v):
        t = v["step"]
        batch = tf.shape(v["search"]["done"])[0]
        last = last_tokens(v["search"]["seq"], t, start_id)
        carried = v.get("constants", const_carried)

        def every_row():
            return call_step(tf.reshape(last, [-1]), v["state"], t, carried)

        def first_rows():
            """Step 0 on one row per input (its K rows are the same) and tiled."""

            def first(x):
                return x[::k]

            return tile_beam(
                call_step(
                    tf.fill([batch], start_id),
                    tf.nest.map_structure(first, v["state"]),
                    t,
                    [first(x) for x in carried],
                ),
                k,
            )

        if constants is None:  # the step's own constants have B*K rows
            scores, new_state, extras = every_row()
        else:
            scores, new_state, extras = tf.cond(tf.equal(t, 0), first_rows, every_row)
        parents, found = strategy.select(v["search"], scores, extras if record_extras else {}, t)
        new = dict(step=t + 1, state=gather_rows(new_state, parent_rows(parents, k)), search=found)
        if not shrink:
            return [new]
        new.update(constants=v["constants"], index=v["index"], results=v["results"])
        return [
            tf.cond(
                tf.reduce_any(found["done"]),
                lambda: _retire(new, k, strategy),
                lambda: new,
            )
        ]

    limit = max_steps if step_limit is None else tf.minimum(step_limit, max_steps)

    def cond(v):
        return tf.logical_and(v["step"] < limit, tf.logical_not(tf.reduce_all(v["search"]["done"])))

    if not shrink:
        final = tf.while_loop(cond, body, [loop_vars])[0]
        return strategy.result(final["search"], final["step"])
    invariants = {
        name: tf.nest.map_structure(
            lambda x: x.shape if name in ("step", "results") else _any_rows(x.shape), value
        )
        for name, value in loop_vars.items()
    }
    final = tf.while_loop(cond, body, [loop_vars], shape_invariants=[invariants])[0]
    return _store(final["results"], final["index"], strategy.result(final["search"], final["step"]))


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
    """The loop variables of ``search(shrink=True)`` without its finished inputs, whose
    results go to ``v["results"]``.

    Only for a strategy that freezes a finished input (See's): its result is then the
    same at its last step as after the loop.
    """
    done = v["search"]["done"]
    finished = tf.where(done)[:, 0]
    going = tf.where(tf.logical_not(done))[:, 0]
    going_rows = tf.reshape(going[:, tf.newaxis] * k + tf.range(k, dtype=tf.int64), [-1])

    def rows(indices):
        return tf.nest.map_structure(lambda x: tf.gather(x, indices), v["search"])

    return dict(
        step=v["step"],
        search=rows(going),
        index=tf.gather(v["index"], going),
        state=gather_rows(v["state"], going_rows),
        constants=[tf.gather(x, going_rows) for x in v["constants"]],
        results=_store(
            v["results"],
            tf.gather(v["index"], finished),
            strategy.result(rows(finished), v["step"]),
        ),
    )

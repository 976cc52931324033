"""Batched, in-graph beam search and greedy decoding for the three hosts.

``search`` is the beam search driver, over any model's step (``DecodingModel``,
``model_step``); a ``BeamStrategy`` scores and selects: ``SeeStrategy`` (``beam_search``)
here, tensorflow/nmt's in ``gnmt_beam_search``.

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


def _where_rows(row_mask, old, new):
    """``old`` where ``row_mask`` [R] is True, else ``new``; both [R, ...]."""
    mask = tf.reshape(row_mask, tf.concat([[-1], tf.ones([tf.rank(new) - 1], tf.int32)], 0))
    return tf.where(mask, old, new)


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


def _top_k_log(scores, k, probabilities):
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


class SeeStrategy:
    """See et al.'s selection (``beam_search``'s): each live hypothesis proposes its
    ``width`` best tokens; a candidate ending in [STOP] becomes a result (after
    ``min_steps``), the others fill the beam; an input with ``beam_size`` results or no
    live hypothesis is done and frozen; its answer is its best normalised result.

    Args:
      beam_size, stop_id, min_steps, length_normalization, gnmt_alpha,
        candidates_per_hypothesis, probabilities: as ``SearchSettings``'.
    """

    def __init__(
        self,
        beam_size: int,
        stop_id: int,
        min_steps: int = 0,
        length_normalization: str = "average",
        gnmt_alpha: float = 0.6,
        candidates_per_hypothesis: Optional[int] = None,
        probabilities: bool = False,
    ) -> None:
        if length_normalization not in LENGTH_NORMALIZATIONS:
            raise ValueError(
                "length_normalization must be one of %s, got %r"
                % (LENGTH_NORMALIZATIONS, length_normalization)
            )
        self.beam_size = beam_size
        self.stop_id = stop_id
        self.min_steps = min_steps
        self.length_normalization = length_normalization
        self.gnmt_alpha = gnmt_alpha
        self.candidates_per_hypothesis = candidates_per_hypothesis
        self.probabilities = probabilities

    def initial(
        self, batch: Union[tf.Tensor, int], max_steps: Union[tf.Tensor, int], extras: Any
    ) -> Dict[str, Any]:
        """The beam and the results before the first step (``BeamStrategy.initial``)."""
        k = self.beam_size
        empty_extras = {
            name: tf.zeros(tf.concat([[batch, k, max_steps], tf.shape(x)[1:]], 0), x.dtype)
            for name, x in extras.items()
        }
        return dict(
            seq=tf.fill([batch, k, max_steps], self.stop_id),
            alive_logp=tf.zeros([batch, k]),
            alive_valid=tf.tile(tf.range(k)[tf.newaxis] == 0, [batch, 1]),
            alive_extras=empty_extras,
            fin_seq=tf.fill([batch, k, max_steps], self.stop_id),
            fin_score=tf.fill([batch, k], _NEG_INF),
            fin_extras=empty_extras,
            fin_count=tf.zeros([batch], tf.int32),
            done=tf.zeros([batch], tf.bool),
        )

    def select(
        self, v: Dict[str, Any], scores: tf.Tensor, extras: Dict[str, tf.Tensor], t: tf.Tensor
    ) -> Tuple[tf.Tensor, Dict[str, Any]]:
        """See's walk over the step's candidates (``BeamStrategy.select``); a done input's
        variables stay as they were."""
        k, stop_id = self.beam_size, self.stop_id
        batch = tf.shape(v["done"])[0]
        width = self.candidates_per_hypothesis or 2 * k
        if scores.shape[-1] is not None:
            width = min(width, scores.shape[-1])
        top_logp, top_ids = _top_k_log(scores, width, self.probabilities)
        total = v["alive_logp"][:, :, tf.newaxis] + tf.reshape(top_logp, [batch, k, width])
        total = tf.where(v["alive_valid"][:, :, tf.newaxis], total, _NEG_INF)
        # All candidates of an input, best first; top_k keeps the lower index on ties,
        # as the original's stable sort keeps the order hypothesis-major, token-minor.
        cand_total, order = tf.math.top_k(tf.reshape(total, [batch, k * width]), k * width)
        cand_ids = tf.gather(tf.reshape(top_ids, [batch, k * width]), order, batch_dims=1)
        valid = cand_total > _NEG_INF
        is_stop = tf.equal(cand_ids, stop_id)
        live = tf.logical_and(valid, tf.logical_not(is_stop))
        stop_ok = tf.logical_and(tf.logical_and(valid, is_stop), t >= self.min_steps)
        # The walk looks at candidate i while fewer than K live hypotheses and fewer
        # than K results (counting earlier steps') were collected before it.
        live_before = tf.cumsum(tf.cast(live, tf.int32), axis=1, exclusive=True)
        stops_before = tf.cumsum(tf.cast(stop_ok, tf.int32), axis=1, exclusive=True)
        walked = tf.logical_and(live_before < k, v["fin_count"][:, tf.newaxis] + stops_before < k)

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

            seq = write_step(from_parent(v["seq"]), t, tf.gather(cand_ids, indices, batch_dims=1))
            extra = {
                name: write_step(
                    from_parent(v["alive_extras"][name]),
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
        source = tf.maximum(tf.range(k)[tf.newaxis] - v["fin_count"][:, tf.newaxis], 0)
        new_result = tf.logical_and(
            tf.range(k)[tf.newaxis] >= v["fin_count"][:, tf.newaxis],
            tf.gather(stop_valid, source, batch_dims=1),
        )

        def place(old, new):
            moved = tf.gather(new, source, batch_dims=1)
            mask = tf.reshape(
                new_result,
                tf.concat([tf.shape(new_result), tf.ones([tf.rank(old) - 2], tf.int32)], 0),
            )
            return tf.where(mask, moved, old)

        score = _normalize(stop_total, t + 1, self.length_normalization, self.gnmt_alpha)
        fin_count = v["fin_count"] + tf.reduce_sum(tf.cast(new_result, tf.int32), axis=1)
        done = tf.logical_or(fin_count >= k, tf.logical_not(tf.reduce_any(live_valid, 1)))
        keep = v["done"]
        new = dict(
            seq=_where_rows(keep, v["seq"], alive_seq),
            alive_logp=_where_rows(keep, v["alive_logp"], alive_logp),
            alive_valid=_where_rows(keep, v["alive_valid"], live_valid),
            alive_extras={
                n: _where_rows(keep, v["alive_extras"][n], alive_extras[n]) for n in alive_extras
            },
            fin_seq=_where_rows(keep, v["fin_seq"], place(v["fin_seq"], stop_seq)),
            fin_score=_where_rows(keep, v["fin_score"], place(v["fin_score"], score)),
            fin_extras={
                n: _where_rows(keep, v["fin_extras"][n], place(v["fin_extras"][n], stop_extras[n]))
                for n in stop_extras
            },
            fin_count=_where_rows(keep, v["fin_count"], fin_count),
            done=tf.logical_or(keep, done),
        )
        return parents, new

    def result(self, v: Dict[str, Any], t: tf.Tensor) -> Dict[str, tf.Tensor]:
        """The best result per input, or its best live hypothesis where none finished
        (``BeamStrategy.result``)."""
        has_results = v["fin_count"] > 0
        alive_score = tf.where(
            v["alive_valid"],
            _normalize(v["alive_logp"], t, self.length_normalization, self.gnmt_alpha),
            _NEG_INF,
        )
        scores = tf.where(has_results[:, tf.newaxis], v["fin_score"], alive_score)
        best = tf.argmax(scores, axis=1, output_type=tf.int32)

        def pick(finished, alive):
            chosen = _where_rows(has_results, finished, alive)
            return tf.gather(chosen, best, batch_dims=1)

        ids, lengths = cut_at_stop(pick(v["fin_seq"], v["seq"]), self.stop_id)
        out = {"ids": ids, "lengths": lengths, "scores": tf.gather(scores, best, batch_dims=1)}
        for name in v["fin_extras"]:
            out[name] = pick(v["fin_extras"][name], v["alive_extras"][name])
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
      step_fn: ``(tokens [B*K] int32, state, step) -> (scores [B*K, W], state,
        extras)``, or ``(tokens, state, step, constants)`` when ``constants`` is given
        (B is then the number of live inputs with ``settings.shrink``). ``scores`` are
        log-probabilities (or probabilities, see ``SearchSettings.probabilities``);
        ``tokens`` are the hypotheses' last tokens as generated (the host maps ids it
        cannot embed, e.g. extended-vocabulary ids to [UNK]); ``state`` is any nest of
        [B*K, ...] tensors; ``extras`` is a dict of [B*K, ...] tensors (e.g. attention),
        recorded at every step for the chosen hypothesis with ``record_extras``.
      initial_state: nest of [B, ...] tensors, tiled to the beam here.
      batch_size: B, the number of inputs (a Python int or scalar tensor).
      settings: the search's (``SearchSettings``).
      constants: optional nest of [B, ...] tensors that the step reads but does not
        change (e.g. the encoder states), tiled to the beam here and passed to
        ``step_fn`` as [B*K, ...] (None entries stay None). Given, the first step, where
        an input's K hypotheses are one, runs on B rows (tokens, state and constants
        [B, ...]) and its outputs are tiled; ``settings.shrink`` needs them.

    Returns:
      A dict: ``ids`` [B, max_steps] (generated tokens, cut before the first stop and
      padded with ``stop_id``), ``lengths`` [B], ``scores`` [B] (normalised), and each
      extra as [B, max_steps, ...] for the chosen hypothesis.
    """
    strategy = SeeStrategy(
        settings.beam_size,
        settings.stop_id,
        settings.min_steps,
        settings.length_normalization,
        settings.gnmt_alpha,
        settings.candidates_per_hypothesis,
        settings.probabilities,
    )
    return search(strategy, step_fn, initial_state, batch_size, settings, constants)


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
        step_logp, next_ids = _top_k_log(step_scores, 1, probabilities)
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

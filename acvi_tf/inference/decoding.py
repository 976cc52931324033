"""Batched, in-graph decoding for the three hosts: the protocol a host model decodes
through (``DecodingModel``, ``model_step``), the strategies by name (``STRATEGIES``),
and ``decode``, the one entry from a model, a strategy and a batch of inputs to its
decoded sequences, and ``compile_decode``, its ``tf.function``. The searches themselves
are ``acvi_tf.inference.search``'s driver and one module per strategy.
"""

from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    runtime_checkable,
)

import numpy as np
import tensorflow as tf

from acvi_tf.inference import search as search_lib
from acvi_tf.inference.beam_search import SeeStrategy
from acvi_tf.inference.gnmt_beam_search import GNMTStrategy
from acvi_tf.inference.greedy_search import GreedyStrategy
from acvi_tf.inference.sampling import SamplingStrategy
from acvi_tf.inference.search import SearchSettings, SearchStrategy

if TYPE_CHECKING:
    from acvi_tf.contexts.context import ContextLayer


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

    def start(self, inputs: Dict[str, tf.Tensor], **options: Any) -> Tuple[Any, Any]:
        """Encodes a batch.

        Args:
          inputs: the host's input tensors by name (the NMT model's ``src`` and
            ``src_len``, the captioner's ``features`` and ``num_frames``, the
            summarizer's batch).
          **options: a host's keyword-only switches, each with the decoding default
            (every model's ``training``; the summarizers' ``initial_state_attention``
            and ``coverage_on``): ``start(inputs)`` is every host's decoding start.

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


def model_step(model: DecodingModel) -> Callable:
    """The search step of a ``DecodingModel``: ``(tokens, state, t, constants) -> (scores,
    state, extras)``, its ``decode_step`` on the constants the driver passes (``search``
    given ``constants``)."""

    def step(tokens, state, t, constants):
        del t
        return model.decode_step(tokens, state, constants)

    return step


# The search strategies by name, each made from its ``SearchSettings``: See et al.'s
# beam search, tensorflow/nmt's, greedy decoding and sampling.
STRATEGIES: Dict[str, Callable[[SearchSettings], SearchStrategy]] = {
    "see_beam": SeeStrategy,
    "gnmt_beam": GNMTStrategy,
    "greedy": GreedyStrategy,
    "sample": SamplingStrategy,
}


def decode(
    model: DecodingModel,
    strategy: SearchStrategy,
    inputs: Dict[str, tf.Tensor],
    start_options: Optional[Mapping[str, Any]] = None,
    with_posterior: bool = False,
) -> Dict[str, tf.Tensor]:
    """Decodes a batch: ``model.start(inputs)``, then ``strategy`` over the model's step
    on the search driver, given the step's constants (so the first step runs once per
    input, and the batch may shrink as inputs finish).

    Args:
      model: the model.
      strategy: the search, with its settings (``STRATEGIES[name](settings)``), whose
        ``probabilities`` must be ``model.probability_scores``.
      inputs: the host's input tensors by name (``DecodingModel.start``'s).
      start_options: the host's switches for ``start`` (None: its defaults).
      with_posterior: also return what the context mechanism shows of its posterior
        for the decoded attention (``posterior``; the settings must record the step's
        extras, ``attn`` among them).

    Raises:
      ValueError: the settings take the scores for what they are not.

    Returns:
      The strategy's results: ``ids`` [B, T], ``lengths`` [B], ``scores`` [B], when its
      settings record extras each extra [B, T, ...], and with ``with_posterior`` the
      posterior's values (``POSITION_VALUES``, ``STEP_VALUES``).
    """
    if strategy.settings.probabilities != model.probability_scores:
        raise ValueError(
            "the search's settings must say probabilities=%s, what the model's scores are"
            % model.probability_scores
        )
    constants, state = model.start(inputs, **(start_options or {}))
    batch = tf.shape(tf.nest.flatten(state)[0])[0]
    out = search_lib.search(strategy, model_step(model), state, batch, constants=constants)
    if not with_posterior:
        return out
    return dict(out, **posterior(model, constants, out["attn"]))


def compile_decode(
    model: DecodingModel,
    strategy_for: Callable[[Dict[str, tf.Tensor]], SearchStrategy],
    input_signature: Dict[str, tf.TensorSpec],
    jit_compile: bool = False,
    start_options: Optional[Mapping[str, Any]] = None,
    with_posterior: bool = False,
) -> Callable[[Dict[str, tf.Tensor]], Dict[str, tf.Tensor]]:
    """``decode`` as one ``tf.function`` of a batch of inputs.

    Args:
      model: the model.
      strategy_for: the search for a batch (its settings may follow from the inputs'
        shapes, e.g. NMT's step limit of twice the longest source).
      input_signature: the inputs' specs by name.
      jit_compile: compile the search with XLA (build the model with ``jit_compile``
        too; the settings must not ``shrink``).
      start_options, with_posterior: as ``decode``'s.

    Returns:
      ``inputs -> decode(model, strategy_for(inputs), inputs)``, traced once per input
      signature.
    """

    @tf.function(
        input_signature=[input_signature], autograph=False, jit_compile=jit_compile or None
    )
    def decode_batch(inputs):
        return decode(model, strategy_for(inputs), inputs, start_options, with_posterior)

    return decode_batch

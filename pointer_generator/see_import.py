"""See et al.'s TF1 pointer-generator checkpoints in ``PointerGenerator``.

``import_see_checkpoint(path, model)`` copies the variables of a checkpoint written by
abisee/pointer-generator (the released pretrained models, or any run of the original) into
a built soft-attention ``PointerGenerator`` (``build_see_model``), and
``save_for_run_summarization`` writes it as a checkpoint of ``run_summarization``; the
command ``pointer_generator.see_checkpoint`` does both.

Variable names. The original's scopes give ``seq2seq/embedding/embedding``,
``seq2seq/encoder/bidirectional_rnn/{fw,bw}/lstm_cell/*``,
``seq2seq/reduce_final_st/{w,bias}_reduce_{c,h}``, ``seq2seq/output_projection/{w,v}``
and, under ``seq2seq/decoder/attention_decoder/``: ``W_h``, ``v``, ``coverage/w_c``, the
decoder ``lstm_cell/*`` and the ``Linear/{Matrix,Bias}`` of See's own ``linear()`` for the
input projection (no scope), ``Attention/``, ``calculate_pgen/`` and
``AttnOutputProjection/``. TF 1.0 names the LSTM variables ``lstm_cell/weights`` and
``lstm_cell/biases``; TF 1.2 renamed them ``lstm_cell/kernel`` and ``lstm_cell/bias``.
That is the only difference between the two released checkpoints (``linear()`` is See's
code and names its variables ``Matrix`` and ``Bias`` under every TF version); the version
is read off the checkpoint's LSTM names. ``global_step`` becomes the step of the new
checkpoint; Adagrad slots (names containing ``Adagrad``) are dropped, so resumed training
starts with fresh optimizer state, as the original's ``restore_best_model`` and
``convert_to_coverage_model`` do.

Conversions:

* LSTMs. TF1's ``LSTMCell`` keeps one kernel [in + H, 4H] whose rows are
  ``[input; h_{t-1}]`` and whose gate columns are ``i, j, f, o`` (``j`` the candidate), and
  adds ``forget_bias=1.0`` to the f pre-activation at run time. Keras's ``LSTMCell`` keeps
  ``kernel`` [in, 4H] and ``recurrent_kernel`` [H, 4H] with gate columns ``i, f, c, o`` and
  no run-time forget bias. So the kernel is split after its first ``in`` rows, the gate
  blocks are permuted (i, j, f, o) -> (i, f, j, o) in the kernels and the bias, and 1.0 is
  added to the f block of the bias. Both cells compute ``c = f c_{t-1} + i tanh(j)`` and
  ``h = o tanh(c)`` with logistic gates, so the converted cell is the same function.
* ``W_h`` [1, 1, 2H, 2H] (a 1x1 convolution kernel) becomes the [2H, 2H] kernel of the
  scorer's memory projection, ``v`` [2H] the [2H, 1] energy kernel, ``w_c`` [1, 1, 1, 2H]
  the [1, 2H] coverage kernel.
* Every other matrix is copied as it is: the project's model concatenates the inputs of
  each linear layer in the original's order (input projection ``[y_t; c*_{t-1}]``,
  attention query ``[c; h]`` (``linear()`` flattens the ``LSTMStateTuple`` (c, h)),
  ``calculate_pgen`` ``[c*_t; c; h; x_t]``, ``AttnOutputProjection`` ``[h; c*_t]``, reduce
  state ``[fw; bw]``), so no rows are permuted.

A checkpoint without ``coverage/w_c`` (trained without ``--coverage``) leaves the model's
``w_c`` as initialised (and logged); a baseline checkpoint (``--pointer_gen=False``) may
lack ``calculate_pgen`` when the model is a baseline too. Anything else missing, any
variable the map does not know, and any shape that does not fit the model raise
``SeeCheckpointError`` naming the variables (and both shapes).
"""

import dataclasses
import os
from typing import Callable, Dict, Iterable, NamedTuple, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from acvi_tf import errors
from acvi_tf.contexts import context as context_lib
from acvi_tf.training import checkpoints
from pointer_generator import model as model_lib

# TF1 LSTMCell variable names (weights, bias) by TensorFlow version.
LSTM_NAMES = {"1.0": ("weights", "biases"), "1.2.1": ("kernel", "bias")}
FORGET_BIAS = 1.0  # TF1 LSTMCell's default, added to the f gate at run time
GLOBAL_STEP = "global_step"
_ENCODER = "seq2seq/encoder/bidirectional_rnn/"
_REDUCE = "seq2seq/reduce_final_st/"
_DECODER = "seq2seq/decoder/attention_decoder/"


class SeeCheckpointError(errors.UserError, ValueError):
    """The checkpoint does not fit the model; the message names the variables."""


class ImportedCheckpoint(NamedTuple):
    """What ``import_see_checkpoint`` read.

    Attributes:
      path: the checkpoint prefix.
      tf_version: "1.0" or "1.2.1", from the LSTM variable names.
      step: the original's ``global_step`` (0 when absent).
      coverage: whether the checkpoint holds ``w_c`` (a coverage model).
    """

    path: str
    tf_version: str
    step: int
    coverage: bool


@dataclasses.dataclass(frozen=True)
class _Transfer:
    """Original variables that fill some Keras variables.

    Attributes:
      sources: TF1 name -> shape in the original, in the order ``convert`` takes them.
      targets: the Keras variables filled.
      convert: arrays of ``sources`` -> one array per target.
      optional: why the sources may all be absent ("" when they are required).
    """

    sources: Dict[str, Tuple[int, ...]]
    targets: Tuple[tf.Variable, ...]
    convert: Callable[..., Tuple[np.ndarray, ...]]
    optional: str = ""


def split_tf1_lstm(
    weights: np.ndarray, biases: np.ndarray, input_dim: int, forget_bias: float = FORGET_BIAS
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keras ``LSTMCell`` weights from a TF1 ``LSTMCell``'s fused kernel and bias.

    Args:
      weights: [input_dim + H, 4H], rows ``[input; h]``, gate columns i, j, f, o.
      biases: [4H], gates i, j, f, o.
      input_dim: size of the cell's input.
      forget_bias: TF1's run-time forget bias, folded into the f gate's bias.

    Returns:
      ``(kernel [input_dim, 4H], recurrent_kernel [H, 4H], bias [4H])``, gates i, f, c, o.
    """

    def reorder(array):
        i, j, f, o = np.split(array, 4, axis=-1)
        return np.concatenate([i, f, j, o], axis=-1)

    kernel = reorder(weights)
    bias = reorder(biases).copy()
    units = bias.shape[-1] // 4
    bias[units : 2 * units] += forget_bias
    return kernel[:input_dim], kernel[input_dim:], bias


def _copy(name, shape, variable, optional=""):
    """The original variable ``name``, reshaped to ``variable``'s shape."""
    target_shape = tuple(variable.shape)
    return _Transfer(
        {name: shape}, (variable,), lambda array: (array.reshape(target_shape),), optional
    )


def _dense(kernel_name, bias_name, rows, cols, layer, optional=""):
    """A kernel [rows, cols] and a bias [cols] copied into a Keras ``Dense``."""
    return _Transfer(
        {kernel_name: (rows, cols), bias_name: (cols,)},
        (layer.kernel, layer.bias),
        lambda kernel, bias: (kernel, bias),
        optional,
    )


def _linear(scope, rows, cols, layer, optional=""):
    """See's ``linear()`` (``scope/Linear/Matrix`` and ``Bias``) into a Keras ``Dense``."""
    return _dense(scope + "Linear/Matrix", scope + "Linear/Bias", rows, cols, layer, optional)


def _lstm(scope, tf_version, input_dim, units, cell):
    """A TF1 ``LSTMCell`` (``scope/lstm_cell/...``) into a Keras ``LSTMCell``."""
    weights, biases = (scope + "lstm_cell/" + name for name in LSTM_NAMES[tf_version])
    return _Transfer(
        {weights: (input_dim + units, 4 * units), biases: (4 * units,)},
        (cell.kernel, cell.recurrent_kernel, cell.bias),
        lambda w, b: split_tf1_lstm(w, b, input_dim),
    )


def _transfer_plan(model, tf_version):
    """Every transfer from the original's variables to ``model``'s."""
    vocab, units = model.vocab_size, model.hidden_dim
    emb = model.embedding.output_dim
    scorer = model.scorer
    baseline = "" if model.pointer_gen else "a baseline (--pointer_gen=False) model"
    return [
        _copy("seq2seq/embedding/embedding", (vocab, emb), model.embedding.embeddings),
        _lstm(_ENCODER + "fw/", tf_version, emb, units, model.encoder.forward_layer.cell),
        _lstm(_ENCODER + "bw/", tf_version, emb, units, model.encoder.backward_layer.cell),
        _dense(_REDUCE + "w_reduce_c", _REDUCE + "bias_reduce_c", 2 * units, units, model.reduce_c),
        _dense(_REDUCE + "w_reduce_h", _REDUCE + "bias_reduce_h", 2 * units, units, model.reduce_h),
        _linear(_DECODER, emb + 2 * units, emb, model.input_projection),
        _lstm(_DECODER, tf_version, emb, units, model.cell),
        _linear(_DECODER + "Attention/", 2 * units, 2 * units, scorer.query_projection),
        _copy(_DECODER + "W_h", (1, 1, 2 * units, 2 * units), scorer.memory_projection.kernel),
        _copy(_DECODER + "v", (2 * units,), scorer.energy.kernel),
        _copy(
            _DECODER + "coverage/w_c",
            (1, 1, 1, 2 * units),
            scorer.coverage_projection.kernel,
            optional="a model trained without --coverage",
        ),
        _linear(
            _DECODER + "calculate_pgen/", 4 * units + emb, 1, model.p_gen_layer, optional=baseline
        ),
        _linear(_DECODER + "AttnOutputProjection/", 3 * units, units, model.output_projection),
        _dense(
            "seq2seq/output_projection/w",
            "seq2seq/output_projection/v",
            units,
            vocab,
            model.vocab_projection,
        ),
    ]


def resolve_checkpoint(path: str) -> str:
    """The checkpoint prefix for ``path``, a prefix or a directory with a state file."""
    if os.path.isdir(path):
        latest = checkpoints.latest_checkpoint(path)
        if latest is None:
            raise SeeCheckpointError(
                "%s is a directory without a checkpoint; "
                "pass the checkpoint prefix (e.g. .../model-238410)" % path
            )
        return latest
    return path


def _ignored(name):
    """Variables the import skips: the step (read apart) and Adagrad slots."""
    return name == GLOBAL_STEP or "Adagrad" in name


def detect_tf_version(names: Iterable[str]) -> str:
    """ "1.0" or "1.2.1": which LSTM variable names the checkpoint uses.

    Args:
      names: the checkpoint's variable names.

    Raises:
      SeeCheckpointError: neither or both namings are present.
    """
    found = [
        version
        for version, (weights, _) in LSTM_NAMES.items()
        if any(name.endswith("/lstm_cell/" + weights) for name in names)
    ]
    if len(found) != 1:
        raise SeeCheckpointError(
            "cannot tell the TensorFlow version of this checkpoint: want LSTM variables "
            "named either .../lstm_cell/weights (TF 1.0) or .../lstm_cell/kernel (TF 1.2), "
            "found %s among: %s"
            % (
                "both" if found else "neither",
                ", ".join(sorted(n for n in names if not _ignored(n))),
            )
        )
    return found[0]


def _used_transfers(plan, shapes):
    """The transfers to run; optional ones whose sources are all absent are logged."""
    used = []
    for transfer in plan:
        if transfer.optional and not any(name in shapes for name in transfer.sources):
            logging.info(
                "The checkpoint has no %s (%s): the model keeps its initial values there",
                ", ".join(transfer.sources),
                transfer.optional,
            )
            continue
        used.append(transfer)
    return used


def _check_names(plan, used, shapes):
    """Raises ``SeeCheckpointError`` listing missing and unexpected variables."""
    known = {name for transfer in plan for name in transfer.sources}
    missing = sorted(name for transfer in used for name in transfer.sources if name not in shapes)
    unexpected = sorted(name for name in shapes if name not in known and not _ignored(name))
    if missing or unexpected:
        lines = ["the checkpoint does not match See et al.'s pointer-generator:"]
        if missing:
            lines.append("missing variables: " + ", ".join(missing))
        if unexpected:
            lines.append("unexpected variables: " + ", ".join(unexpected))
        raise SeeCheckpointError("\n".join(lines))


def _check_shapes(used, shapes):
    """Raises ``SeeCheckpointError`` naming every variable whose shape does not fit."""
    wrong = [
        "%s: checkpoint %s, model needs %s" % (name, list(shapes[name]), list(shape))
        for transfer in used
        for name, shape in transfer.sources.items()
        if tuple(shapes[name]) != tuple(shape)
    ]
    if wrong:
        raise SeeCheckpointError(
            "shape mismatch (check --vocab_size, --hidden_dim and --emb_dim against the "
            "run that wrote the checkpoint):\n" + "\n".join(wrong)
        )


def _check_model(model):
    """Raises ``SeeCheckpointError`` unless ``model`` is a built soft-attention model."""
    if not isinstance(model.context_layer, context_lib.SoftAttentionContext):
        raise SeeCheckpointError(
            "See et al.'s checkpoints are soft-attention models; build the "
            "PointerGenerator with the 'sa' context, not %s" % type(model.context_layer).__name__
        )
    if not model.built:
        raise SeeCheckpointError(
            "build the model first (call it on a batch, or use build_see_model)"
        )


def _read_step(reader, shapes):
    """The original's ``global_step``; 0, with a warning, when the checkpoint lacks it."""
    if GLOBAL_STEP not in shapes:
        logging.warning("The checkpoint has no global_step; the imported step is 0")
        return 0
    return int(reader.get_tensor(GLOBAL_STEP))


def import_see_checkpoint(
    tf1_checkpoint_path: str, model: model_lib.PointerGenerator
) -> ImportedCheckpoint:
    """Copies See et al.'s TF1 checkpoint into ``model`` (see the module docstring).

    Nothing is assigned unless every check passes.

    Args:
      tf1_checkpoint_path: a TF1 checkpoint prefix, or a directory with a ``checkpoint``
        state file.
      model: a built ``PointerGenerator`` with the soft-attention context.

    Returns:
      An ``ImportedCheckpoint``.

    Raises:
      SeeCheckpointError: the model is not a built soft-attention model, or the checkpoint
        has missing or unexpected variables or shapes that do not fit the model.
    """
    _check_model(model)
    path = resolve_checkpoint(tf1_checkpoint_path)
    reader = tf.train.load_checkpoint(path)
    shapes = reader.get_variable_to_shape_map()
    tf_version = detect_tf_version(shapes)
    plan = _transfer_plan(model, tf_version)
    used = _used_transfers(plan, shapes)
    _check_names(plan, used, shapes)
    _check_shapes(used, shapes)
    assignments = []
    for transfer in used:
        values = transfer.convert(*(reader.get_tensor(name) for name in transfer.sources))
        assignments.extend(zip(transfer.targets, values))
    for variable, value in assignments:
        variable.assign(value.astype(variable.dtype.as_numpy_dtype))
    coverage = _DECODER + "coverage/w_c" in shapes
    step = _read_step(reader, shapes)
    logging.info(
        "Imported %s (TF %s naming, step %d, %s)",
        path,
        tf_version,
        step,
        "with coverage" if coverage else "no coverage",
    )
    return ImportedCheckpoint(path, tf_version, step, coverage)


def build_see_model(
    vocab_size: int, hidden_dim: int = 256, emb_dim: int = 128, pointer_gen: bool = True
) -> model_lib.PointerGenerator:
    """A built soft-attention ``PointerGenerator`` with See's attention masking.

    Args:
      vocab_size: V, reserved tokens included.
      hidden_dim: H.
      emb_dim: E.
      pointer_gen: the copy mechanism.

    Returns:
      The model, every variable created (``w_c`` included).
    """
    model = model_lib.PointerGenerator(
        vocab_size,
        hidden_dim,
        emb_dim,
        pointer_gen,
        context_layer=context_lib.SoftAttentionContext(name="context"),
        attention_masking="renormalize",
    )
    one = tf.ones([1, 1], tf.int32)
    model(dict(enc_batch=one, enc_padding_mask=tf.ones([1, 1]), dec_batch=one), coverage_on=True)
    return model


def save_for_run_summarization(
    model: model_lib.PointerGenerator, imported: ImportedCheckpoint, out_dir: str
) -> str:
    """Writes ``out_dir/model.ckpt-<step>`` and the ``checkpoint`` state file.

    The objects are named as ``run_summarization``'s training checkpoints (``model``,
    ``step``, ``coverage_started``), without optimizer state, so its train, eval and
    decode modes restore it. ``coverage_started`` is set for a coverage checkpoint, so a
    ``--phases`` run does not re-initialise the imported ``w_c``.

    Args:
      model: the imported model.
      imported: the ``ImportedCheckpoint`` of the import.
      out_dir: the experiment's ``train/`` folder.

    Returns:
      The prefix of the written checkpoint.
    """
    return checkpoints.Checkpointer(
        out_dir,
        tf.Variable(imported.step, dtype=tf.int64, name="global_step"),
        checkpoint_name="model.ckpt",
        model=model,
        coverage_started=tf.Variable(imported.coverage, name="coverage_started"),
    ).save()

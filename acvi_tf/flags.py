"""The absl flags every model entry point shares: context mechanism, ACVI options, seeds,
precision and compilation.

Each entry point's ``define_flags(fv)`` calls ``define_flags`` here to put the shared
flags on its ``FlagValues``; importing a module defines no flag. Bad values are rejected
at parse time with a message that names the flag and the allowed range. The run record
helpers read the command's frozen ``acvi_tf.config.Config``; ``acvi_tf.builders`` makes
the objects the flags select (the context layer, the KL schedule, the runtime).
"""

import contextlib
import json
import math
import os
import sys
from typing import (
    Any,
    Callable,
    ContextManager,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
)

import tensorflow as tf
from absl import flags, logging

from acvi_tf import config as config_lib
from acvi_tf import errors, files
from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts import kl_schedule, registry
from acvi_tf.training import checkpoints, distribute
from acvi_tf.training import step as training_lib
from acvi_tf.training import trainer as trainer_lib

# --mixed_precision's values and the Keras policies they set.
PRECISION_POLICIES = {"none": "float32", "float16": "mixed_float16", "bfloat16": "mixed_bfloat16"}

# The shared flags whose values decide the model's variables (`--context` and the
# mechanisms' own, `registry.model_flags`); each entry point adds its
# own (sizes, layers, optimizer) when it reads a run's record (``run_config``).
MODEL_FLAGS = ("context", *registry.model_flags())
# The shared flags that say how a command runs, not what the run is: a command that uses
# a trained run never takes them from its record (each entry point adds its own).
COMMAND_FLAGS = ("distribution_strategy", "num_gpus", "cpu_devices", "allow_data_change")
# Shared flags that a record never holds: a permission of one command, not a setting of
# the run.
UNRECORDED = ("allow_data_change",)
# The run's record, in its folder.
RECORD = "hparams.json"
# The record's key for the training entry point that wrote it.
ENTRY_POINT = "_entry_point"
# The record's entry of the fingerprints of the vocabularies the run trained with.
VOCABULARIES = "_vocabularies"
# The record's entry of the SHA-256 of each file the run trained on, by path: the files
# of its newest training command, which a resume is checked against.
TRAINING_DATA = "_training_data"
# The record's entry of the data it trained on before (``--allow_data_change``), oldest
# first, each as ``TRAINING_DATA`` held it.
EARLIER_TRAINING_DATA = "_earlier_training_data"


class FlagChangeError(errors.UserError, ValueError):
    """A command gives a flag that decides the model's variables another value than the
    run's record."""


class DataChangeError(errors.UserError, ValueError):
    """A command reads a vocabulary whose words differ from the ones the run trained
    with (``check_vocabularies``), or a resume other training data
    (``check_training_data``)."""


class DecodeSettingError(errors.UserError, ValueError):
    """A decode setting that cannot work with the run; the message names the flag, the
    value and the fix."""


class _CommaMultiFlag(flags.MultiFlag):
    """A repeatable flag whose every value may also list values, comma-separated."""

    def _parse(self, arguments):
        if isinstance(arguments, str):
            arguments = [arguments]
        if arguments is not None:
            arguments = [
                part
                for argument in arguments
                for part in (argument.split(",") if isinstance(argument, str) else [argument])
            ]
        return super()._parse(arguments)


def multi_enum_flag(
    name: str, default: Sequence[str], enum_values: Sequence[str], help_text: str
) -> flags.Flag:
    """A flag of several values of ``enum_values``, given comma-separated
    (``--metrics=Bleu_4,CIDEr``, as absl's list flags take them) or repeated
    (``--metrics=Bleu_4 --metrics=CIDEr``, as absl's multi flags); for
    ``flags.DEFINE_flag`` in the module whose flag it is."""
    return _CommaMultiFlag(
        flags.EnumParser(list(enum_values)),
        flags.ArgumentSerializer(),
        name,
        list(default),
        "<%s>, comma-separated or repeated: %s" % ("|".join(enum_values), help_text),
    )


def define_allow_data_change(fv: flags.FlagValues) -> None:
    """Defines ``--allow_data_change`` on ``fv`` (every command that restores a run's
    model or resumes its training takes it).

    Args:
      fv: the command's flags.
    """
    flags.DEFINE_boolean(
        "allow_data_change",
        False,
        "Use a vocabulary with other words than the run trained with (the same ids then "
        "mean other words), or resume on other training data, with a warning; a resume "
        "records them.",
        flag_values=fv,
    )


class _PathParser(flags.ArgumentParser):
    """A path flag's parser: the value as an absolute path (``~`` is the command line's,
    ``config.expand_home``), so that a run's record names the same files to a command
    started in another folder."""

    def parse(self, argument: Optional[str]) -> Optional[str]:
        return os.path.abspath(argument) if argument else argument

    def flag_type(self) -> str:
        return "string"


def take_paths(flag_values: flags.FlagValues, names: Iterable[str]) -> None:
    """Makes the string flags ``names`` parse their values as absolute paths: the files a
    run's record names (its vocabulary, its data), which a later command reads from
    whatever folder it starts in.

    Args:
      flag_values: the ``absl.flags.FlagValues`` that defines them.
      names: the flags' names.
    """
    for name in names:
        flag_values[name].parser = _PathParser()


def define_flags(flag_values=flags.FLAGS):
    """Defines the shared flags and their validators on ``flag_values``.

    Args:
      flag_values: an ``absl.flags.FlagValues``; the global ``FLAGS`` by default.
    """
    fv = flag_values
    flags.DEFINE_enum(
        "context",
        "acvi",
        list(registry.context_names()),
        "How the decoder forms its context vector: %s." % registry.describe_contexts(),
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "attention_masking",
        "neg_inf",
        ["neg_inf", "renormalize"],
        "How padded source positions are removed from the attention: 'neg_inf' masks "
        "the scores before the softmax; 'renormalize' (See et al.'s code) masks after "
        "the softmax and renormalises. Mathematically equal.",
        flag_values=fv,
    )
    _define_kl_flags(fv)
    _define_runtime_flags(fv)
    define_allow_data_change(fv)
    require_finite(__name__, fv)
    # each mechanism's own flags, after the shared ones its checks may read, and their
    # checks after the finiteness of every float
    for mechanism in registry.CONTEXTS.values():
        mechanism.define_flags(fv)
        require_finite(mechanism.define_flags.__module__, fv)
        mechanism.check_flags(fv)


def _define_kl_flags(fv: flags.FlagValues) -> None:
    """Defines the KL term's weight, warm-up and free bits, which every mechanism with a KL
    reads."""
    flags.DEFINE_float(
        "kl_weight",
        None,
        "Weight of the context's KL term in the loss; unset: the "
        "mechanism's own default (acvi: %g, ved: 0.1, the original's gamma, "
        "variational: 1)." % acvi_lib.ACVI_KL_WEIGHT,
        lower_bound=0.0,
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "kl_annealing",
        "none",
        list(kl_schedule.ANNEALINGS),
        "KL warm-up for every KL term (ACVI, VED, variational): 'none', 'linear' from 0 "
        "to 1 over --kl_anneal_steps (Bowman et al. 2016), or VED's original 'tanh' "
        "schedule (frozen at step 3000, near 0.047).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "kl_anneal_steps",
        10000,
        "--kl_annealing=linear: steps to reach weight 1.",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_float(
        "kl_free_bits",
        0.0,
        "Free bits (Kingma et al. 2016): KL below this many nats "
        "per decoder step (per example for VED's sentence latent) is not penalised, "
        "in the form --kl_free_bits_form names.",
        lower_bound=0.0,
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "kl_free_bits_form",
        "minibatch",
        list(kl_schedule.FREE_BITS_FORMS),
        "--kl_free_bits per decoder step: 'minibatch' (Kingma et al.) floors the step's KL "
        "averaged over the batch, sum_t max(free_bits, mean_b KL_bt); 'example' floors "
        "each example's, sum_t mean_b max(free_bits, KL_bt).",
        flag_values=fv,
    )


def _define_runtime_flags(fv: flags.FlagValues) -> None:
    """Defines how a command runs: the seed, determinism, what a non-finite loss does,
    precision, XLA and the distribution strategy."""
    flags.DEFINE_integer(
        "seed", 111, "Seed of every random draw in the run (See et al. use 111).", flag_values=fv
    )
    flags.DEFINE_boolean(
        "deterministic",
        False,
        "Turn on TensorFlow op determinism: bit-identical reruns, slower on GPU.",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "nan_policy",
        "stop",
        list(training_lib.NAN_POLICIES),
        "A batch with a NaN or infinite loss is never applied; then 'stop' ends training "
        "with the step and the last good checkpoint, 'skip_batch' logs the batch, counts "
        "it in TensorBoard (train/skipped_batches) and goes on (stopping after 100 in a "
        "row).",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "mixed_precision",
        "none",
        list(PRECISION_POLICIES),
        "Compute the matrix products in float16 (mixed_float16) or bfloat16 "
        "(mixed_bfloat16) with float32 variables; softmaxes, the variance network's "
        "output, the sampling, the KL and the losses stay float32, and no loss scaling "
        "is applied. 'none': float32 throughout.",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "jit_compile",
        False,
        "Compile the training step's forward and backward passes and the beam search with "
        "XLA (the summarizer also compiles its eval step); batches then get fixed shapes.",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "distribution_strategy",
        "default",
        list(distribute.STRATEGIES),
        "Training on one device ('default'), on the GPUs of this machine ('mirrored': "
        "MirroredStrategy), or on the machines TF_CONFIG names ('multi_worker': "
        "MultiWorkerMirroredStrategy). --batch_size stays the global batch.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "num_gpus",
        None,
        "mirrored and multi_worker: the GPUs of each machine to use (default: all of them; "
        "0: the CPU).",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "cpu_devices",
        None,
        "mirrored on the CPU (no GPU visible, or --num_gpus=0): split the CPU into this "
        "many logical devices, one replica each, to try the strategy without GPUs "
        "(default: one device).",
        lower_bound=1,
        flag_values=fv,
    )


def require_total_steps(step_flags, known, fix, flag_values=flags.FLAGS):
    """Rejects ``--acvi_gumbel_fraction > 0`` at parse time when the run's length is unknown.

    The Gumbel phase is the last fraction of the training steps, so a host must know
    where training ends before it starts.

    Args:
      step_flags: the host's flags that decide the length (e.g. ``["max_steps"]``).
      known: ``dict of those flags -> bool``, whether the total step count is known.
      fix: what the message tells the user to set.
      flag_values: where the flags live.
    """
    flags.register_multi_flags_validator(
        ["acvi_gumbel_fraction"] + list(step_flags),
        lambda d: d["acvi_gumbel_fraction"] == 0.0 or known(d),
        message="--acvi_gumbel_fraction needs the number of training steps, which is "
        "not known here; %s." % fix,
        flag_values=flag_values,
    )


def require_finite(module, flag_values=flags.FLAGS):
    """Rejects NaN and infinite values of every float flag ``module`` defines, at parse
    time (a ``lower_bound`` lets both through: ``--lr=nan`` would train on NaN).

    Args:
      module: the defining module's name (``__name__``; also when run as ``__main__``).
      flag_values: where the flags are defined.
    """
    by_module = flag_values.flags_by_module_dict()
    for defining in {module, sys.argv[0]}:
        for flag in by_module.get(defining, []):
            if isinstance(flag.parser, flags.FloatParser):
                flags.register_validator(
                    flag.name,
                    lambda value: value is None or math.isfinite(value),
                    message="--%s must be a finite number." % flag.name,
                    flag_values=flag_values,
                )


def require_learning_rate(name: str, flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """Rejects a learning rate that is not > 0 at parse time: at 0 the weights never
    move, and the run would end with its initial weights and no word about it.

    Args:
      name: the learning-rate flag (``lr``, ``learning_rate``).
      flag_values: where the flag is defined.
    """
    flags.register_validator(
        name,
        lambda value: value is None or value > 0,
        message="--%s must be > 0 (at 0 training never changes the weights)" % name,
        flag_values=flag_values,
    )


def require_dropout(name: str, flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """Rejects a dropout rate outside [0, 1) at parse time: at 1 every unit is dropped,
    which Keras refuses only once the model is built.

    Args:
      name: the dropout flag.
      flag_values: where the flag is defined.
    """
    flags.register_validator(
        name,
        lambda value: value is None or 0 <= value < 1,
        message="--%s must be in [0, 1) (a rate of 1 drops every unit)" % name,
        flag_values=flag_values,
    )


def write_flag_record(
    out_dir,
    config,
    name="hparams.json",
    resume_model_flags=None,
    chief=True,
    vocabularies=None,
    training_data=None,
    command_flags=(),
    entry_point=None,
):
    """Writes the run's settings to ``out_dir/name``: the recorded flags of ``config``
    (the entry point's and the shared ones), the fingerprints of its vocabularies, the
    SHA-256 of its training files, the TensorFlow version, the command line and the
    training entry point.

    On a resume (``resume_model_flags`` given and a record there), the flags are first
    compared with the record: a changed flag of ``resume_model_flags`` or ``MODEL_FLAGS``
    is refused, naming the flag, the run's value and the new one, and so are a vocabulary
    with other words (``check_vocabularies``) and other training data
    (``check_training_data``) unless ``--allow_data_change``; any other change (the
    learning rate, the steps, the eval cadence) takes effect and is logged.

    Args:
      out_dir: the run's folder (created if missing).
      config: the command's ``acvi_tf.config.Config``.
      name: the file name.
      resume_model_flags: the entry point's flags that decide the model's variables,
        when the run resumes from a checkpoint (``compare_flag_record``); None: a new
        run.
      chief: False on a multi-worker strategy's other workers, which compare but leave
        the record to the chief.
      vocabularies: ``check_vocabularies``'s mapping of the run's vocabularies (None:
        none recorded).
      training_data: the files the run trains on (None: none recorded).
      command_flags: the entry point's own command flags, which a resume may change
        without a log line (``compare_flag_record``).
      entry_point: the training entry point's module (``Task.entry_point``), recorded as
        the run's writer whatever command started it (the generic command's too); None:
        the command line names it.

    Returns:
      The recorded flag values (a dict).

    Raises:
      FlagChangeError: a resume changes a flag that decides the model's variables.
      DataChangeError: a resume reads a vocabulary with other words, or other
        training data.
    """
    values = {n: v for n, v in config.record().items() if n not in UNRECORDED}
    hashes = {os.path.abspath(p): files.sha256(p) for p in training_data or ()}
    previous = {}
    if resume_model_flags is not None:
        compare_flag_record(out_dir, config, resume_model_flags, name, command_flags)
        check_vocabularies(out_dir, vocabularies or {}, name, config.allow_data_change)
        check_training_data(out_dir, hashes, name, config.allow_data_change)
        previous = read_flag_record(out_dir, name) or {}
    else:
        _refuse_another_commands_record(out_dir, values, name)
    if not chief:
        return values
    record = dict(values, _tensorflow=tf.__version__, _command=" ".join(sys.argv))
    if entry_point:
        record[ENTRY_POINT] = entry_point
    # a resume keeps the recorded fingerprints of what it does not read
    kept = dict(previous.get(VOCABULARIES) or {})
    kept.update({key: found for key, (_, found) in (vocabularies or {}).items()})
    if kept:
        record[VOCABULARIES] = kept
    if hashes:
        record[TRAINING_DATA] = hashes
        earlier = list(previous.get(EARLIER_TRAINING_DATA) or [])
        trained = previous.get(TRAINING_DATA)
        if trained and sorted(trained.values()) != sorted(hashes.values()):
            earlier.append(trained)  # an allowed change keeps what the run trained on
        if earlier:
            record[EARLIER_TRAINING_DATA] = earlier
    files.atomic_write_text(
        os.path.join(out_dir, name), json.dumps(record, indent=2, sort_keys=True) + "\n"
    )
    logging.vlog(1, "flags: %s", values)
    return values


@contextlib.contextmanager
def training_record(
    out_dir: str,
    config: config_lib.Config,
    model_flags: Optional[Iterable[str]],
    chief: bool = True,
    vocabularies: Optional[Mapping[str, Any]] = None,
    training_data: Optional[Sequence[str]] = None,
    command_flags: Iterable[str] = (),
    checkpoint_dir: Optional[str] = None,
    entry_point: Optional[str] = None,
) -> Iterator[dict]:
    """A training run's ``write_flag_record`` (``model_flags``: its resume's
    ``resume_model_flags``, None for a new run), around the training in the ``with``
    block. A run whose trainer is alive is refused first, before anything is restored
    or written; when the trainer refuses the folder later (its checkpoints are another
    model's or cannot be read, its index names an older checkpoint than the folder holds),
    the record is put back as it was (``files.restored_on``), so a refused run leaves the
    folder as it found it. A trainer that another one started at the same time locked
    out leaves the record alone: the folder and its record are the other one's.

    Args:
      checkpoint_dir: the folder the trainer locks (default ``out_dir``).
      entry_point: the training entry point's module, recorded as the run's writer.

    Yields:
      The recorded flag values.
    """
    if chief:
        trainer_lib.refuse_in_use(checkpoint_dir or out_dir)
    path = os.path.join(out_dir, RECORD)
    refusals = (checkpoints.CheckpointMismatchError, checkpoints.CheckpointError)
    with files.restored_on(path, refusals):
        yield write_flag_record(
            out_dir,
            config,
            RECORD,
            model_flags,
            chief,
            vocabularies=vocabularies,
            training_data=training_data,
            command_flags=command_flags,
            entry_point=entry_point,
        )


def refused_run_undone(out_dir: str, checkpoint_dir: Optional[str] = None) -> ContextManager[None]:
    """A training command's context in which a user's error (its data, its vocabulary,
    its flags) removes what the command added to ``out_dir`` while the run holds no
    checkpoint (``files.undone_on``): a refused new run leaves nothing a rerun would
    mistake for a run. Spared: a loss that is not finite (that run trained, and its event
    file shows how), and a folder another trainer holds (two trainers started together
    on a new folder: what is there is the other one's).

    Args:
      out_dir: the run's folder.
      checkpoint_dir: the folder of its training checkpoints (default ``out_dir``).
    """
    trained = checkpoint_dir or out_dir

    def keep() -> bool:
        return trainer_lib.in_use(trained) or checkpoints.latest_checkpoint(trained) is not None

    return files.undone_on(
        out_dir,
        (errors.UserError,),
        spared=(training_lib.NonFiniteLossError, files.FolderInUseError),
        keep=keep,
    )


# What a fingerprint's unit (``vocabulary.fingerprint``) says of a changed file: what it
# is, and what the change would do.
_VOCABULARY_KINDS = {
    "words": ("vocabulary", "the same ids would mean other words"),
    "merges": ("set of BPE codes", "new text would split into other pieces than it trained on"),
}


def check_vocabularies(
    run_dir: str, vocabularies: Mapping[str, Any], name: str = RECORD, allow: bool = False
) -> None:
    """Refuses a vocabulary whose words differ from the ones the run's record holds
    (``vocabulary.fingerprint``): its ids would give the embedding rows other meanings,
    though every shape matches. A run without the record's entry is not checked.

    Args:
      run_dir: the run's folder.
      vocabularies: the record's key of each vocabulary (``"vocab_path"``) ->
        ``(where the command read it, as the message names it, its fingerprint)``.
      name: the record's file name.
      allow: ``--allow_data_change``: a warning instead.

    Raises:
      DataChangeError: naming the record, the vocabulary, both fingerprints and
        the fix.
    """
    recorded = (read_flag_record(run_dir, name) or {}).get(VOCABULARIES) or {}
    for key, (source, found) in vocabularies.items():
        trained = recorded.get(key)
        if trained is None or trained == found:
            continue
        unit = "merges" if "merges" in found else "words"
        what, harm = _VOCABULARY_KINDS[unit]
        message = "%s: the run trained with another %s (%s) than %s (%s), so %s" % (
            os.path.join(run_dir, name),
            what,
            "%d %s, sha256 %s..." % (trained.get(unit, 0), unit, trained["sha256"][:12]),
            source,
            "%d %s, sha256 %s..." % (found[unit], unit, found["sha256"][:12]),
            harm,
        )
        if not allow:
            raise DataChangeError(
                message + "; give the %s the run trained with, or --allow_data_change to use "
                "this one" % what
            )
        logging.warning("%s; using it (--allow_data_change)", message)


def trained_on(run_dir: str, name: str = RECORD) -> List[str]:
    """The training files the run's record names (now and before an allowed change):
    files a command that uses the run must not write over.

    Args:
      run_dir: the run's folder.
      name: the record's file name.
    """
    recorded = read_flag_record(run_dir, name) or {}
    groups = [recorded.get(TRAINING_DATA) or {}, *(recorded.get(EARLIER_TRAINING_DATA) or [])]
    return sorted({path for group in groups if isinstance(group, dict) for path in group})


def check_training_data(
    run_dir: str, hashes: Mapping[str, str], name: str = RECORD, allow: bool = False
) -> None:
    """Refuses a resume on other training data than the run's record holds: files of
    other content, by SHA-256 (a moved or renamed file of the same content passes). A run
    without the record's entry is not checked.

    Args:
      run_dir: the run's folder.
      hashes: the SHA-256 of each file the resume trains on, by path.
      name: the record's file name.
      allow: ``--allow_data_change``: a warning instead.

    Raises:
      DataChangeError: naming the record, a file of one side and the fix.
    """
    trained = (read_flag_record(run_dir, name) or {}).get(TRAINING_DATA)
    if not trained or sorted(trained.values()) == sorted(hashes.values()):
        return
    new = [path for path, digest in sorted(hashes.items()) if digest not in trained.values()]
    gone = [path for path, digest in sorted(trained.items()) if digest not in hashes.values()]
    record = os.path.join(run_dir, name)
    if new:
        message = "%s: %s (sha256 %s...) is none of the %d file(s) the run trained on" % (
            record,
            new[0],
            hashes[new[0]][:12],
            len(trained),
        )
    else:
        message = "%s: the run trained on %s (sha256 %s...), which this command leaves out" % (
            record,
            gone[0],
            trained[gone[0]][:12],
        )
    if not allow:
        raise DataChangeError(
            message + "; give the data the run trained on, or --allow_data_change to go on "
            "with this"
        )
    logging.warning("%s; training on it (--allow_data_change)", message)


def check_recorded_file(
    config: config_lib.Config,
    name: str,
    path: str,
    what: str,
    run_dir: str,
    error: Callable[[str], Exception],
) -> None:
    """Refuses a file that the run's record names through the flag ``name`` (the command
    line does not give it) and that is gone, naming the record, the flag's value and the
    fix: put it back; or, for a record written before path flags were recorded whole, run
    from the folder the training ran in, against which its relative path reads.

    Args:
      config: the command's flags.
      name: the flag, e.g. ``vocab_prefix``.
      path: the file it names.
      what: what the file is to the run, e.g. ``"the vocabulary the run trained with"``.
      run_dir: the run's folder, which holds its record.
      error: the exception class of the refusal.
    """
    if not path or os.path.isfile(path) or name in config.given:
        return
    value = config[name]
    fix = (
        "put it back there"
        if os.path.isabs(value)
        else "the record names it relative to the folder the training ran in: run this "
        "command from there"
    )
    raise error(
        "%s: no such file: %s, which %s names (--%s=%s); %s"
        % (path, what, os.path.join(run_dir, RECORD), name, value, fix)
    )


def vocabulary_source(
    config: config_lib.Config, names: Sequence[str], given: str, path: str
) -> str:
    """How a refusal names where a vocabulary came from: ``given`` (its flags, as the
    host writes them) where the command line gave one of the flags ``names``, else the
    file the run's record points to (a command that reads the record, such as
    ``translate``, has no such flag to give).

    Args:
      config: the command's flags.
      names: the flags that give the vocabulary (``vocab_path``, ``vocab_size``).
      given: how the message names those flags' values.
      path: the vocabulary's file.
    """
    if any(name in config.given for name in names):
        return given
    return "the run's vocabulary file %s" % path


def vocabulary_checks(
    run_dir: str,
    vocabularies: Mapping[str, Any],
    sizes: Callable[[str], None],
    allow: bool = False,
) -> Callable[[str], None]:
    """A host's ``check`` of a checkpoint before it is restored: ``sizes`` (its tables'
    rows, ``checkpoints.vocabulary_check``), then ``check_vocabularies`` of the run's
    record (``allow``: ``--allow_data_change``)."""

    def check(path: str) -> None:
        sizes(path)
        check_vocabularies(run_dir, vocabularies, allow=allow)

    return check


def _refuse_another_commands_record(out_dir, values, name):
    """Refuses a new run in a folder whose record holds flags this command does not
    have: another entry point's run (an NMT ``--out_dir`` given a captioner's folder),
    whose record the new run would write over.

    Raises:
      FlagChangeError: naming the record, a few of its foreign flags and the fix.
    """
    recorded = read_flag_record(out_dir, name)
    foreign = sorted(
        n
        for n in recorded or {}
        if not n.startswith("_") and n not in values and n not in UNRECORDED
    )
    if foreign:
        raise FlagChangeError(
            "%s records the flags %s, which this command does not have: the folder holds "
            "another command's run, which this one would write over; give a new folder"
            % (os.path.join(out_dir, name), ", ".join("--" + n for n in foreign[:3]))
        )


# The packages whose training entry points write run records (``_command`` names the
# entry point's file, ``<package>/<module>.py``, as ``python -m`` gives it).
HOST_PACKAGES = ("pointer_generator", "nmt", "video_caption")


def _entry_point(path: str) -> Optional[str]:
    """``package.module`` of a host's file ``.../<package>/<module>.py``, else None."""
    parts = os.path.normpath(path).split(os.sep)[-2:]
    if len(parts) != 2 or parts[0] not in HOST_PACKAGES or not parts[1].endswith(".py"):
        return None
    return "%s.%s" % (parts[0], parts[1][: -len(".py")])


def _refuse_another_entry_points_record(path, recorded, reader):
    """Refuses a run whose record ``path`` another host's training entry point wrote (a
    summarizer's ``--log_root`` given a captioner's folder) when ``reader``, the entry
    point of the command's host, is another: its flags would be compared as if they were
    this entry point's, and its checkpoints hold another model.

    Raises:
      FlagChangeError: naming the record, the entry point that wrote it and the fix.
    """
    words = str(recorded.get("_command") or "").split()
    writer = recorded.get(ENTRY_POINT) or (_entry_point(words[0]) if words else None)
    # no verdict on a record or a command of another kind of start (a test's)
    if writer and reader and writer != reader:
        raise FlagChangeError(
            "%s is the record of a %s run, not one of %s: the folder holds another host's "
            "run, which this command cannot use; give the folder of a %s run, or a new "
            "folder for a new run" % (path, writer, reader, reader)
        )


def read_flag_record(run_dir: str, name: str = RECORD) -> Optional[dict]:
    """The flag values a run's record holds (``write_flag_record``), or None when the run
    has none (a run from before records existed, an imported checkpoint).

    Args:
      run_dir: the run's folder.
      name: the record's file name.

    Returns:
      A dict by flag name (and ``_tensorflow``, ``_command``), or None.

    Raises:
      files.RecordError: the record cannot be read (a write cut short, an edit).
    """
    path = os.path.join(run_dir, name)
    if not os.path.exists(path):
        return None
    return files.read_json(
        path,
        "restore it, or delete it and give the run's model flags on the command line "
        "(training writes a new one)",
    )


def _model_change(path, name, recorded, given):
    """The ``FlagChangeError`` of a flag the run's record holds with another value."""
    return FlagChangeError(
        "%s: the run was trained with --%s=%s, this command gives --%s=%s, which changes "
        "the model; leave --%s out to use the run's value, or use a new folder for a new run"
        % (path, name, recorded, name, given, name)
    )


def run_config(
    config: config_lib.Config,
    run_dir: str,
    model_flags: Iterable[str],
    command_flags: Iterable[str],
    define_flags: Callable[[flags.FlagValues], None],
    name: str = RECORD,
    entry_point: Optional[str] = None,
) -> config_lib.Config:
    """The settings of a command that uses a trained run (eval, decode, inference,
    export, a resumed training run): the entry point's defaults, then what the run's
    record holds, then the flags the command line gave (``config.given``).

    The command's own flags (``command_flags`` and ``COMMAND_FLAGS``: the mode, the data
    it reads, where it writes, how it runs) are never taken from the record. A given flag
    of ``model_flags`` or ``MODEL_FLAGS`` that contradicts the record is refused. Without
    a record, one warning, and the command's flags are the run's. The record's values
    pass the flags' own checks (a positive size, a finite rate), as a command line's do.

    Args:
      config: the command's ``acvi_tf.config.Config``, parsed with the training entry
        point's flags.
      run_dir: the run's folder, the one holding the record.
      model_flags: the entry point's flags that decide the model's variables.
      command_flags: the entry point's flags that belong to each command.
      define_flags: the training entry point's ``define_flags(flag_values)``, whose
        checks the record's values pass.
      name: the record's file name.
      entry_point: the training entry point's module (``Task.entry_point``): a record
        another host's entry point wrote is refused. None: no verdict (a test's start).

    Returns:
      The ``acvi_tf.config.Config``; its ``given`` stays the command line's.

    Raises:
      FlagChangeError: naming the flag, the run's value, the given one and the fix.
      files.RecordError: a recorded value of the wrong kind, or one its flag refuses.
    """
    recorded = read_flag_record(run_dir, name)
    path = os.path.join(run_dir, name)
    if recorded is None:
        logging.warning(
            "%s is missing (a run from before records, or an imported checkpoint): "
            "the run's settings are this command's flags",
            path,
        )
        return config
    _refuse_another_entry_points_record(path, recorded, entry_point)
    values = config.record()
    for n in sorted(config.given & (set(model_flags) | set(MODEL_FLAGS))):
        if n in recorded and n in values:
            _record_value(path, n, recorded[n], config[n])  # "sixteen" is named as such
            if recorded[n] != values[n]:
                raise _model_change(path, n, recorded[n], values[n])
    own = set(command_flags) | set(COMMAND_FLAGS) | config.given
    taken = {n: v for n, v in recorded.items() if n in config.recorded and n not in own}
    merged = config.replace(**{n: _record_value(path, n, v, config[n]) for n, v in taken.items()})
    if taken:
        _check_flags(define_flags, merged, path)
    return merged


def _check_flags(define_flags, config, path):
    """Runs the checks of ``define_flags``'s flags on ``config``'s values, which the
    record at ``path`` gave in part.

    Raises:
      files.RecordError: a value its flag, or a rule over several flags, refuses.
    """
    fv = flags.FlagValues()
    define_flags(fv)
    fv.mark_as_parsed()
    try:
        for n in config:
            if n in fv:
                value = config[n]
                fv[n].value = list(value) if isinstance(value, tuple) else value
                if isinstance(fv[n].parser, flags.EnumParser):
                    _check_choices(fv[n].parser, n, value)
        fv.validate_all_flags()
    except flags.IllegalFlagValueError as e:
        raise files.RecordError(
            "%s holds a value its flag refuses (%s); put the value the run trained with "
            "back there" % (path, e)
        ) from e


def _check_choices(parser: flags.EnumParser, name: str, value: Any) -> None:
    """Refuses a value of a choice flag (each of a list's) that is not one of its
    choices, as the command line would.

    Raises:
      flags.IllegalFlagValueError: naming the flag and the value.
    """
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(item, str):  # other kinds: ``_record_value``'s
            try:
                parser.parse(item)
            except ValueError as e:
                raise flags.IllegalFlagValueError("flag --%s=%s: %s" % (name, item, e)) from e


# What a recorded value must be, by the type of the flag's value in the command.
_KINDS = ((bool, (bool,), "true or false"), (int, (int,), "a whole number"))
_KINDS += ((float, (int, float), "a number"), (str, (str,), "a string"))
_KINDS += ((tuple, (list,), "a list"),)
# Kinds a flag's record held before the flag changed kind, still read: a run recorded
# before --mixed_precision took a precision holds a boolean (builders.precision_policy).
_FORMER_KINDS = {"mixed_precision": (bool,)}


def _record_value(path: str, name: str, value: Any, current: Any) -> Any:
    """``value``, the record's for ``--name``, checked against the kind of the flag's
    value in the command (``current``; None: not checked): an integer flag refuses
    ``"sixteen"``, ``16.5`` and ``null`` (only a flag without a default can be unset),
    a float flag takes ``1`` as ``1.0``.

    Raises:
      files.RecordError: naming the record, the flag, the value and what it must be.
    """
    if current is None or isinstance(value, _FORMER_KINDS.get(name, ())):
        return value
    for kind, accepted, what in _KINDS:
        if isinstance(current, kind):
            if not isinstance(value, accepted) or (kind is not bool and isinstance(value, bool)):
                raise files.RecordError(
                    "%s: --%s is %s there, not %s as the flag takes; write the value the "
                    "run trained with, or delete the record and give the run's model flags "
                    "on the command line" % (path, name, json.dumps(value), what)
                )
            return float(value) if kind is float else value
    return value


def describe(
    config: config_lib.Config, names: Sequence[str], derived: Optional[Mapping[str, str]] = None
) -> str:
    """``name=value (how)`` of each setting, for a command's one log line: ``given`` (on
    the command line), ``derived: <why>`` (``derived``: name -> why) or ``the run's``.

    Args:
      config: the command's ``acvi_tf.config.Config`` (after ``run_config``).
      names: the settings, in order.
      derived: settings derived from others, by name, with the rule.

    Returns:
      The settings joined by commas.
    """
    derived = derived or {}

    def how(n):
        if n in config.given:
            return "given"
        return "derived: %s" % derived[n] if n in derived else "the run's"

    return ", ".join("%s=%s (%s)" % (n, config[n], how(n)) for n in names)


def compare_flag_record(out_dir, config, model_flags, name="hparams.json", command_flags=()):
    """Compares the flags of a resumed training run with the run's record, if it has
    one: a changed flag of ``model_flags`` or ``MODEL_FLAGS`` is refused; every other
    change of the run's settings is logged (not the command's own flags: where it reads
    and writes, how it runs).

    Args:
      out_dir: the run's folder.
      config: the command's ``acvi_tf.config.Config``.
      model_flags: the entry point's flags that decide the model's variables.
      name: the record's file name.
      command_flags: the entry point's own command flags (``COMMAND_FLAGS`` besides).

    Raises:
      FlagChangeError: naming the flag, the run's value, the new one and the fix.
    """
    recorded = read_flag_record(out_dir, name)
    if recorded is None:
        return
    path = os.path.join(out_dir, name)
    values = config.record()
    model_flags = set(model_flags) | set(MODEL_FLAGS)
    changed = sorted(n for n in values if n in recorded and recorded[n] != values[n])
    for n in changed:
        if n in model_flags:
            _record_value(path, n, recorded[n], config[n])  # "sixteen" is named as such
            raise _model_change(path, n, recorded[n], values[n])
    changed = [n for n in changed if n not in set(command_flags) | set(COMMAND_FLAGS)]
    if changed:
        logging.info(
            "Continuing the run with changed flags: %s",
            ", ".join("--%s %s -> %s" % (n, recorded[n], values[n]) for n in changed),
        )

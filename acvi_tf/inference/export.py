"""What the hosts' export commands share: their flags, the in-graph tokeniser a corpus
allows, an atomic SavedModel write, and the command itself (``export_run``).

A host's export module (``pointer_generator.export``, ``nmt.export``,
``video_caption.export``) is a ``tf.Module`` whose ``tf.function`` signatures take raw
strings (or frame features); loading it needs TensorFlow and tensorflow-text only
(``import tensorflow_text`` registers the tokeniser's ops).
"""

import glob
import os
import shutil
import socket
import tempfile
from typing import Callable, Dict, Mapping, Tuple

import tensorflow as tf
from absl import app, flags, logging

from acvi_tf import builders, errors, files, progress
from acvi_tf.config import Config


def define_flags(flag_values: flags.FlagValues, text_input: bool = True) -> None:
    """Defines ``--export_dir``, ``--overwrite`` and, for a model that reads text,
    ``--pretokenized``."""
    flags.DEFINE_string("export_dir", None, "Where the SavedModel goes.", flag_values=flag_values)
    flags.DEFINE_boolean(
        "overwrite", False, "Replace an existing --export_dir.", flag_values=flag_values
    )
    flags.mark_flag_as_required("export_dir", flag_values=flag_values)
    if text_input:
        flags.DEFINE_boolean(
            "pretokenized",
            False,
            "The model takes text tokenised as the corpus was (tokens separated by spaces) "
            "instead of raw text; for corpora whose tokenizer has no graph form (treebank, "
            "ptb).",
            flag_values=flag_values,
        )


def graph_tokenizer_for(
    record: str, settings: Mapping, pretokenized: bool
) -> Callable[[tf.Tensor], tf.RaggedTensor]:
    """``texts [B] -> tokens [B, (n)]`` as the corpus was tokenised, in TensorFlow ops.

    Args:
      record: the corpus record's path (for the message).
      settings: its ``tokenizer`` and ``lowercase``.
      pretokenized: the input is already tokenised: split it at whitespace.

    Raises:
      app.UsageError: the corpus's tokenizer has no graph form and ``pretokenized`` is
        False.
    """
    if pretokenized:
        return tf.strings.split
    if settings["tokenizer"] != "tftext":
        found = (
            "%s records --tokenizer=%s" % (record, settings["tokenizer"])
            if os.path.exists(record)
            else "%s is missing, so the corpus is taken to be tokenised with %s"
            % (record, settings["tokenizer"])
        )
        raise app.UsageError(
            "%s, which has no graph form; rebuild the corpus with --tokenizer=tftext, or "
            "export with --pretokenized (the model then takes text tokenised as the corpus "
            "was)" % found
        )
    # imported here: tensorflow-text loads its ops library, which only a raw-text export needs
    from acvi_tf.text import graph_tokenizer

    lowercase = settings["lowercase"]
    return lambda texts: graph_tokenizer.tokenize(texts, lowercase)


# Files of a trained run (its record, best model, checkpoint index) that no SavedModel has.
_RUN_RECORDS = ("hparams.json", "best.json", "checkpoint")


def refuse_existing(export_dir: str, overwrite: bool) -> None:
    """Refuses an existing ``export_dir`` unless ``overwrite``: an export command calls
    it first, before it loads the model.

    Args:
      export_dir: the SavedModel's folder.
      overwrite: ``--overwrite``.

    Raises:
      app.UsageError: ``export_dir`` exists and ``overwrite`` is False, or it holds
        something other than a SavedModel (a run's folder, its checkpoints), which
        ``overwrite`` never replaces.
    """
    if not os.path.exists(export_dir):
        return
    if not overwrite:
        raise app.UsageError(
            "%s exists; give a new --export_dir (e.g. the next version number) or --overwrite"
            % os.path.abspath(export_dir)
        )
    if not os.path.isdir(export_dir) or not os.listdir(export_dir):
        return
    run = [
        path
        for name in _RUN_RECORDS
        for path in glob.glob(os.path.join(glob.escape(export_dir), "**", name), recursive=True)
    ]
    if run or not os.path.exists(os.path.join(export_dir, "saved_model.pb")):
        raise app.UsageError(
            "%s is not an export (%s); --overwrite replaces only a SavedModel's folder, so "
            "give another --export_dir"
            % (os.path.abspath(export_dir), "it holds %s" % run[0] if run else "no saved_model.pb")
        )


def export_run(
    config: Config,
    load_config: Callable[[], Config],
    build: Callable[[Config], Tuple[tf.Module, Dict[str, Callable]]],
    what: str,
) -> tf.Module:
    """A host's export command: refuses an existing ``--export_dir`` first, then builds
    the served module from the run's settings (without XLA) and saves it (``save``).

    Args:
      config: the export command's ``Config`` (``--export_dir``, ``--overwrite``).
      load_config: ``() -> the run's Config`` (its record with the command's settings).
      build: ``run's Config -> (module, its signatures by name)``.
      what: what the module serves, for the log (``translator``).

    Returns:
      The module saved.

    Raises:
      app.UsageError: ``--export_dir`` exists and ``--overwrite`` is not given.
    """
    refuse_existing(config.export_dir, config.overwrite)
    model_config = load_config().replace(jit_compile=False)
    builders.configure_runtime(model_config)
    module, signatures = build(model_config)
    path = save(module, config.export_dir, signatures, config.overwrite)
    logging.info("Exported the %s to %s", what, path)
    return module


def save(
    module: tf.Module,
    export_dir: str,
    signatures: Mapping[str, Callable],
    overwrite: bool = False,
) -> str:
    """Saves ``module`` with ``signatures``; the folder appears whole or not at all, with
    the permissions of a folder made under the process's umask (readable by a server of
    another user under umask 022). It is written in a staging folder beside it, named
    after this machine and process; staging folders that an export killed on this
    machine left are removed first.

    Args:
      module: the module to save.
      export_dir: the SavedModel's folder.
      signatures: ``tf.function``s with an input signature, by signature name; the save
        traces each.
      overwrite: replace an existing ``export_dir``.

    Returns:
      The absolute path of the SavedModel.

    Raises:
      app.UsageError: ``export_dir`` exists and ``overwrite`` is False.
      OSError: ``export_dir`` cannot be written (its folder, a full disk); names it,
        not the staging folder.
    """
    export_dir = os.path.abspath(export_dir)
    refuse_existing(export_dir, overwrite)
    parent = os.path.dirname(export_dir)
    with files.named_as(export_dir):
        os.makedirs(parent, exist_ok=True)
        _remove_abandoned_staging(parent)
        staging = tempfile.mkdtemp(prefix="%s%d-" % (staging_prefix(), os.getpid()), dir=parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)  # mkdtemp's folder is the owner's only
    try:
        # the save traces each signature once (one traced before it is traced again there)
        names = ", ".join(signatures)
        with progress.stage("Tracing the signatures %s and writing the SavedModel" % names):
            tf.saved_model.save(module, staging, signatures=dict(signatures))
        if os.path.exists(export_dir):  # with --overwrite; else another export ended first
            refuse_existing(export_dir, overwrite)
            shutil.rmtree(export_dir)
        os.replace(staging, export_dir)
    except Exception as e:
        full = errors.disk_full(e)
        if full is None:
            raise
        raise OSError(full.errno, full.strerror, export_dir) from e
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return export_dir


def staging_prefix() -> str:
    """``.export-<this machine>-``: the start of this machine's staging folders' names."""
    return ".export-%s-" % socket.gethostname().replace("-", "_")


def _remove_abandoned_staging(parent: str) -> None:
    """Removes the staging folders in ``parent`` of exports on this machine whose process
    is gone (killed while it wrote), with a log line each."""
    prefix = staging_prefix()
    for name in sorted(os.listdir(parent)):
        pid = name[len(prefix) :].split("-")[0]
        if not (name.startswith(prefix) and pid.isdigit()):
            continue
        try:
            os.kill(int(pid), 0)
            continue  # its export still runs (or another user's process has the number)
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
        logging.warning("Removed %s, left by an export that was killed", os.path.join(parent, name))


def vocabulary_table(words, default_id: int) -> tf.lookup.StaticHashTable:
    """``word -> id`` (its position in ``words``), ``default_id`` for any other word."""
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(words, tf.range(len(words), dtype=tf.int32)),
        default_value=default_id,
    )


def join_words(words: tf.Tensor, lengths: tf.Tensor) -> tf.Tensor:
    """The first ``lengths[b]`` words of each row of ``words`` [B, T], joined by spaces."""
    return tf.strings.reduce_join(
        tf.RaggedTensor.from_tensor(words, lengths=lengths), axis=1, separator=" "
    )

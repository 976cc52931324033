"""The one checkpoint helper of every host: the latest checkpoints of a run and its best
model.

``Checkpointer`` keeps a run's model, optimizer, global step (and whatever else the host
tracks) in one folder, the ``max_to_keep`` latest checkpoints of it, and optionally the
best model so far in a second folder together with ``best.json``, the score it was chosen
by. Every host saves, resumes and keeps its best model through it, so that:

- a step is saved once: saving the step the latest checkpoint already holds does nothing,
  so a checkpoint the ``checkpoint`` file names is never rewritten in place;
- a resume falls back to the previous checkpoint when the latest one cannot be read (a
  kill while it was written), with a warning naming both;
- the best score, and how many scores since have not beaten it, survive a restart, so
  a resumed run replaces the best model only with a better one and early stopping
  counts on;
- a folder whose ``checkpoint`` index is missing, empty, garbage or names a checkpoint
  that is gone or cannot be read is seen through its checkpoint files (newest readable
  first, by the step in the name): the trainer rewrites the index from them, with one
  log line, so a copied run resumes instead of starting afresh over its checkpoints
  (``latest_checkpoint`` gives every other command the same view);
- a checkpoint of another model (another entry point's, another model type's), of other
  vocabulary sizes or of other shapes is refused before anything is restored, in one
  line naming the checkpoint, a variable and both shapes (``check_checkpoint``), and a
  folder that holds only another entry point's checkpoints is never trained over;
- the folder a trainer owns loses the ``*_temp`` folders of saves a kill interrupted
  (``remove_interrupted_saves``).

A job that follows a training run (an eval job, a decoder) takes each new checkpoint once
through ``newest_checkpoints``, which waits for the next one and steps over a checkpoint
that disappears between listing and restoring. A command that uses a trained run restores
it through ``restore_for_inference``: the given checkpoint, else the best model (in
``best/``, ``best_dir``), else the newest one, checked before it is restored.
"""

import collections
import functools
import json
import os
import re
import shutil
import time
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import tensorflow as tf
from absl import logging

from acvi_tf import errors, files

_VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"
BEST_RECORD = "best.json"
# The folder of a run's best model and its record, in every host (``best_dir``).
BEST_DIR = "best"
# The index TensorFlow keeps in a checkpoint folder: which checkpoints it holds, newest last.
INDEX = "checkpoint"

# What reading a damaged or vanished checkpoint raises: TensorFlow's errors, and
# IndexError from the reader of a truncated data file ("Read less bytes than requested").
UNREADABLE = (tf.errors.OpError, IndexError)

# A checkpoint's index file: ``<name>-<step>.index``, and ``<name>-<step>_<tag>.index``
# for one written beside a step's (the summarizer's ``model.ckpt-8_cov_init``).
_CHECKPOINT_FILE = re.compile(r"(?P<name>.+)-(?P<step>\d+)(?P<tag>_\w+)?\.index")
# A line of the index: a checkpoint's path (quoted, without escapes) or a timestamp.
_INDEX_LINE = re.compile(
    r'\s*(?:(?P<path_field>model_checkpoint_path|all_model_checkpoint_paths)\s*:\s*"(?P<path>[^"\\]+)"'
    r"|(?P<time_field>all_model_checkpoint_timestamps|last_preserved_timestamp)\s*:\s*"
    r"(?P<time>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?))\s*"
)
# The data files of a checkpoint with the prefix before it.
_DATA_FILE = re.compile(r"\.data-(?P<shard>\d{5})-of-(?P<shards>\d{5})")


def _value(variable: tf.Variable) -> float:
    """A scalar variable's value, also of a strategy's mirrored variable."""
    return float(tf.convert_to_tensor(variable))


class CheckpointMismatchError(errors.UserError, ValueError):
    """A checkpoint holds another model than the command's, or the same model with other
    vocabulary sizes or shapes."""


class CheckpointError(errors.UserError, RuntimeError):
    """No checkpoint of a folder can be read; the message names the folder and the fix."""


def _data_files_there(prefix: str) -> bool:
    """Whether every data file of the checkpoint ``prefix`` is there."""
    folder, base = os.path.split(prefix)
    shards = set()
    for name in os.listdir(folder or "."):
        data = _DATA_FILE.fullmatch(name[len(base) :]) if name.startswith(base) else None
        if data:
            shards.add((int(data.group("shard")), int(data.group("shards"))))
    counts = {count for _, count in shards}
    return len(counts) == 1 and len(shards) == counts.pop()


def readable(prefix: str, whole: bool = False) -> bool:
    """Whether the checkpoint ``prefix`` can be read: its index file reads and its data
    files are there, and with ``whole`` every value reads (the data files are read
    through: what a trainer checks before it resumes, once).
    """
    try:
        reader = tf.train.load_checkpoint(prefix)
        if not _data_files_there(prefix):
            return False
        if whole:
            for key in reader.get_variable_to_shape_map():
                reader.get_tensor(key)
        return True
    except (*UNREADABLE, OSError):
        return False


def found_checkpoints(directory: str, name: Optional[str] = None) -> List[str]:
    """The checkpoints in ``directory`` by their index files, whatever its ``checkpoint``
    index says, oldest first by the step in the name.

    Args:
      directory: the folder.
      name: only the checkpoints of this prefix (``model.ckpt``); None: every one.

    Returns:
      Their paths, without the ``.index``.
    """
    found = []
    names = os.listdir(directory) if os.path.isdir(directory) else []
    for file_name in names:
        match = _CHECKPOINT_FILE.fullmatch(file_name)
        if match and name in (None, match.group("name")):
            key = (int(match.group("step")), match.group("tag") or "", file_name)
            found.append((key, os.path.join(directory, file_name[: -len(".index")])))
    return [path for _, path in sorted(found)]


def _listing_problem(fields: Dict[str, list], newest: str) -> Optional[str]:
    """Why ``tf.train.CheckpointManager`` would not list ``newest``, the newest
    checkpoint of an index (``fields``: its values by field), as it must to resume from
    it: last of the listed ones, with a time after the last preserved checkpoint's (each
    no later than now), the time of all of them when none is given. None: it would."""
    listed = fields["all_model_checkpoint_paths"]
    times = fields["all_model_checkpoint_timestamps"]
    preserved = min((fields["last_preserved_timestamp"] or [0.0])[-1], time.time())
    if not listed or listed[-1] != newest:
        return "does not list %s last among its checkpoints" % newest
    if times and len(times) != len(listed):
        return "gives %d times for its %d checkpoints" % (len(times), len(listed))
    if min(times[-1] if times else preserved, time.time()) <= preserved:
        return (
            "lists %s without a time after its last preserved one, which "
            "tf.train.CheckpointManager needs" % newest
        )
    return None


def _newer_checkpoints(directory: str, newest: str, whole: bool = True) -> List[str]:
    """The checkpoints of ``directory`` of the same name as ``newest`` (an index's newest,
    ``model.ckpt-24``) with a later step that can be read (``readable``, with ``whole``),
    oldest first."""
    match = _CHECKPOINT_FILE.fullmatch(newest + ".index")
    if not match:
        return []
    step = int(match.group("step"))
    return [
        path
        for path in found_checkpoints(directory, match.group("name"))
        if int(_CHECKPOINT_FILE.fullmatch(os.path.basename(path) + ".index").group("step")) > step
        and readable(path, whole=whole)
    ]


def _saved_before(index: str, paths: List[str]) -> List[str]:
    """Of ``paths``, checkpoints newer than the one ``index`` names, those saved before
    the index was written: an index that names an older checkpoint on purpose (a restored
    backup, a hand edit), not a save cut short before the index named its checkpoint."""
    if not paths:
        return []
    written = os.path.getmtime(index)
    return [path for path in paths if os.path.getmtime(path + ".index") < written]


def _read_index(directory: str, trainer: bool = False) -> Tuple[Optional[str], Optional[str]]:
    """What the ``checkpoint`` index of ``directory`` names, or why it cannot be used:
    for a reader, a newest checkpoint that is there (``readable``); for a trainer, one
    that reads through and that ``tf.train.CheckpointManager`` lists.

    Returns:
      ``(latest, None)`` for an index whose newest checkpoint can be read (its path);
      for a trainer, ``(latest, problem)`` where that checkpoint reads through but the
      manager would not list it; ``(None, problem)`` otherwise (``problem`` completes
      "the index ...").
    """
    path = os.path.join(directory, INDEX)
    try:
        with open(path, "rb") as f:
            content = f.read()
    except FileNotFoundError:
        return None, "is missing"
    try:
        lines = [line for line in content.decode("utf-8").splitlines() if line.strip()]
    except UnicodeDecodeError:
        return None, "is not text"
    if not lines:
        return None, "is empty"
    matches = [_INDEX_LINE.fullmatch(line) for line in lines]
    if not all(matches):
        return None, "is not a checkpoint index"
    fields = collections.defaultdict(list)
    for m in matches:
        if m.group("path_field"):
            fields[m.group("path_field")].append(m.group("path"))
        else:
            fields[m.group("time_field")].append(float(m.group("time")))
    latest = fields["model_checkpoint_path"]
    if len(latest) != 1:
        return None, "names no newest checkpoint"
    prefix = os.path.join(directory, latest[0])
    if not os.path.exists(prefix + ".index"):
        return None, "names %s, which is missing" % latest[0]
    if not readable(prefix, whole=trainer):
        return None, "names %s, which cannot be read" % latest[0]
    if not trainer:
        return prefix, None
    return prefix, _listing_problem(fields, latest[0])


def latest_checkpoint(directory: str) -> Optional[str]:
    """``tf.train.latest_checkpoint`` that never fails on the folder's index: the
    checkpoint the index names as the newest when it can be read, else the newest
    readable checkpoint of the folder by the step in its name (None: none), with a
    warning that names the newer ones it skips.

    Only the folder's trainer rewrites a broken index (``Checkpointer``); a command that
    reads a run (eval, decode, inference) sees the same checkpoints through this, except
    that it checks only that a checkpoint's index file reads and its data files are
    there (``readable``): a truncated data file shows when it is restored.
    """
    latest, _ = _read_index(directory)
    if latest:
        newer = _newer_checkpoints(directory, os.path.basename(latest))
        newer = _saved_before(os.path.join(directory, INDEX), newer)
        if newer and latest not in _SKIPPED:
            _SKIPPED.add(latest)
            logging.warning(
                "%s names %s as the newest checkpoint, though %s %s newer; a command that "
                "reads the run uses it, as the index says (give --ckpt to choose another), "
                "and a training run refuses it",
                os.path.join(directory, INDEX),
                os.path.basename(latest),
                ", ".join(os.path.basename(p) for p in newer),
                "is" if len(newer) == 1 else "are",
            )
        return latest
    skipped = []
    for path in reversed(found_checkpoints(directory)):
        if readable(path):
            if skipped and skipped[0] not in _SKIPPED:
                _SKIPPED.add(skipped[0])
                logging.warning(
                    "%s cannot be read (a save cut short, or a damaged file); this uses the "
                    "newest checkpoint that can, %s",
                    ", ".join(skipped),
                    path,
                )
            return path
        skipped.append(path)
    return None


# The unreadable checkpoints ``latest_checkpoint`` has warned of: once each per process
# (an eval job looks for new checkpoints every few seconds).
_SKIPPED = set()


def checkpoint_to_use(
    given: Optional[str],
    best_dir: str,
    train_dir: str,
    to_validate: str = "rerun the training command to validate it first",
) -> Optional[str]:
    """The checkpoint an inference command restores: ``given`` (``--ckpt``), else the best
    model's, else the newest training checkpoint, with a warning that no validation has
    chosen it (None: none at all).

    Args:
      given: the ``--ckpt`` flag's value, or None.
      best_dir: the run's best-model folder.
      train_dir: the run's training checkpoints' folder.
      to_validate: how the run gets a best model, for the warning.
    """
    path = given or latest_checkpoint(best_dir)
    if path:
        return path
    path = latest_checkpoint(train_dir)
    if path and os.path.exists(os.path.join(best_dir, BEST_RECORD)):
        logging.warning(
            "%s records a best model, but its checkpoint is missing or cannot be read, so "
            "this uses %s of the training, %s; give --ckpt to choose another",
            os.path.join(best_dir, BEST_RECORD),
            _latest_why(train_dir, path),
            path,
        )
    elif path:
        logging.warning(
            "%s holds no best model (none is validated yet, or the folder was removed), so "
            "this uses %s of the training, %s; %s",
            best_dir,
            _latest_why(train_dir, path),
            path,
            to_validate,
        )
    return path


def best_dir(run_dir: str, old: Optional[str] = None) -> str:
    """The folder of a run's best model: ``run_dir/best`` in every host, or the host's
    former folder ``run_dir/old`` (the summarizer's ``eval``, NMT's ``best_bleu``) for a
    run trained before, while that one holds a best model and ``best`` does not exist: the
    run resumes, and its commands restore, where it left off.

    Args:
      run_dir: the run's folder (``--out_dir``; ``log_root/exp_name``).
      old: the host's former best-model folder, relative to ``run_dir`` (None: none).
    """
    new = os.path.join(run_dir, BEST_DIR)
    if old and not os.path.exists(new):
        former = os.path.join(run_dir, old)
        if os.path.exists(os.path.join(former, BEST_RECORD)) or found_checkpoints(former):
            return former
    return new


def _rebuilt_view(directory: str, name: str) -> Tuple[List[str], Optional[str]]:
    """The checkpoints named ``name`` in ``directory`` that a rebuilt index lists, oldest
    first: every one up to the newest readable one, which is last (all of them when none
    can be read), and that newest readable one (None: none).

    Raises:
      CheckpointMismatchError: the folder holds checkpoints of other names only.
    """
    own = found_checkpoints(directory, name)
    if not own:
        others = found_checkpoints(directory)
        if others:
            raise CheckpointMismatchError(
                "%s holds %s and no checkpoint named %s-<step> as this command writes them: "
                "they are another entry point's; give this run a folder of its own"
                % (directory, ", ".join(os.path.basename(p) for p in others), name)
            )
        return [], None
    newest = next((p for p in reversed(own) if readable(p, whole=True)), None)
    return (own[: own.index(newest) + 1] if newest else own), newest


def write_index(directory: str, paths: List[str]) -> None:
    """Writes the ``checkpoint`` index of ``directory`` atomically: the checkpoints
    ``paths`` (in the folder, oldest first), the last one the newest, each named
    relative to the folder, so the run can move, and with the time of its index file
    (``tf.train.CheckpointManager`` lists only those written after the last preserved
    one, set earlier)."""
    names = [os.path.basename(p) for p in paths]
    times = [os.path.getmtime(p + ".index") for p in paths]
    lines = ['model_checkpoint_path: "%s"' % names[-1]]
    lines += ['all_model_checkpoint_paths: "%s"' % name for name in names]
    lines += ["all_model_checkpoint_timestamps: %r" % t for t in times]
    lines.append("last_preserved_timestamp: %r" % (min(times) - 1.0))
    files.atomic_write_text(os.path.join(directory, INDEX), "\n".join(lines) + "\n")


def _repair_index(directory: str, name: str) -> None:
    """Rewrites the ``checkpoint`` index of a trainer's folder when it cannot be used,
    from the checkpoint files named ``name`` there (``_rebuilt_view``), atomically and
    with one log line; an unusable index with no checkpoint beside it is removed.

    A checkpoint newer than the one the index names that was saved after the index was
    written is a save cut short before the index named it: the index is rebuilt with it.

    Raises:
      CheckpointError: the index, written after them, names an older checkpoint than the
        folder holds (a restored backup, a hand edit): a resume from it would write over
        the newer ones, and its saves delete the oldest, so which one to resume from is
        the user's choice; the message names both ways on.
    """
    latest, problem = _read_index(directory, trainer=True)
    index = os.path.join(directory, INDEX)
    newer = _newer_checkpoints(directory, os.path.basename(latest)) if latest else []
    passed = _saved_before(index, newer)
    if passed:
        names = ", ".join(os.path.basename(p) for p in passed)
        raise CheckpointError(
            "%s names %s as the newest checkpoint, though %s %s newer: a resume from it "
            "would write over %s. Remove %s to resume from %s, or remove %s to resume from %s"
            % (
                index,
                os.path.basename(latest),
                names,
                "is" if len(passed) == 1 else "are",
                "it" if len(passed) == 1 else "them",
                names,
                os.path.basename(latest),
                index,
                os.path.basename(passed[-1]),
            )
        )
    if newer:  # saved after the index was written, and not named by it: a save cut short
        problem = (
            "names %s, but %s was saved after it (a save cut short before the index "
            "named it)" % (os.path.basename(latest), os.path.basename(newer[-1]))
        )
    if problem is None or (problem == "is missing" and not found_checkpoints(directory)):
        return
    view, newest = _rebuilt_view(directory, name)
    if not view:
        os.remove(index)
        logging.warning("Removed %s: it %s and the folder holds no checkpoint", index, problem)
        return
    write_index(directory, view)
    logging.warning(
        "The checkpoint index %s %s; rewrote it from the checkpoint files there (%s), "
        "newest readable: %s",
        index,
        problem,
        ", ".join(os.path.basename(p) for p in view),
        os.path.basename(newest) if newest else "none",
    )


def _model_variables(model: tf.Module) -> List[Tuple[List[str], tf.Variable]]:
    """Each variable ``model`` has now, with the paths a ``tf.train.Checkpoint(model=...)``
    may hold it under (``model/encoder/kernel``), the one it writes first (breadth first,
    as TensorFlow names them)."""
    found = {}
    queue, seen = collections.deque([(model, "model")]), {id(model)}
    while queue:
        trackable, path = queue.popleft()
        for child_name, child in tf.train.TrackableView.children(trackable).items():
            child_path = path + "/" + child_name
            if isinstance(child, tf.Variable):
                found.setdefault(id(child), ([], child))[0].append(child_path)
            elif id(child) not in seen:
                seen.add(id(child))
                queue.append((child, child_path))
    return list(found.values())


def _shape(shape) -> str:
    """``(7, 2)``: a shape as the messages give it."""
    return str(tuple(shape))


# What to do about a checkpoint of another model, for a command that reads a run and for
# a resume.
_FIXES = {
    False: "give the flags it was trained with (a run without hparams.json needs them on the "
    "command line), or a checkpoint of a run of this entry point",
    True: "resume it with the entry point and the flags it was trained with (its "
    "hparams.json, where the folder has one, records them), or give this run a folder of "
    "its own",
}


def _another_model(path, model, saved, variables, missing, fix) -> CheckpointMismatchError:
    """The error for a checkpoint (``saved``: its shapes by key) that lacks ``missing``
    of the ``variables`` of ``model``, naming one and a variable it holds instead."""
    ours = {p for paths, _ in variables for p in paths}
    theirs = sorted(
        key[: -len(_VALUE)]
        for key in saved
        if key.startswith("model/") and key.endswith(_VALUE) and "/.OPTIMIZER_SLOT/" not in key
    )
    instead = [key for key in theirs if key not in ours]
    paths, variable = missing[0]
    return CheckpointMismatchError(
        "%s holds another model than this %s.%s: %d of the model's %d variables are not in it, "
        "such as %s with shape %s%s: the run was trained with other model flags, another "
        "model type or another entry point; %s"
        % (
            path,
            type(model).__module__,
            type(model).__name__,
            len(missing),
            len(variables),
            paths[0],
            _shape(variable.shape),
            ", and it holds %s with shape %s instead"
            % (instead[0], _shape(saved[instead[0] + _VALUE]))
            if instead
            else "",
            fix,
        )
    )


def check_checkpoint(
    path: str,
    model: tf.Module,
    check: Optional[Callable[[str], None]] = None,
    resuming: bool = False,
) -> None:
    """Refuses a checkpoint that cannot be restored into ``model``, before anything is:
    one that lacks variables of the model (another entry point's or model type's), then
    what ``check`` refuses (the host's vocabulary sizes), then one that holds a variable
    with another shape.

    Args:
      path: the checkpoint.
      model: the model it is about to be restored into, under ``model`` in the
        ``tf.train.Checkpoint``; variables it has not made yet are not checked.
      check: ``path -> None``, the host's own check (``check_vocabulary``).
      resuming: whether a trainer resumes from it (the fix the message gives).

    Raises:
      CheckpointMismatchError: naming the checkpoint, a variable and both shapes.
      tf.errors.OpError: the checkpoint cannot be read.
    """
    fix = _FIXES[resuming]
    saved = tf.train.load_checkpoint(path).get_variable_to_shape_map()
    variables = _model_variables(model)
    held = []
    for paths, variable in variables:
        keys = [p for p in paths if p + _VALUE in saved]
        held.append((keys[0] if keys else None, variable))
    missing = [(paths, v) for (paths, v), (key, _) in zip(variables, held) if key is None]
    if missing:
        raise _another_model(path, model, saved, variables, missing, fix)
    if check is not None:
        check(path)
    for key, variable in held:
        if list(saved[key + _VALUE]) != variable.shape.as_list():
            raise CheckpointMismatchError(
                "%s holds %s with shape %s, this model's has shape %s: the run was trained "
                "with other model flags; %s"
                % (path, key, _shape(saved[key + _VALUE]), _shape(variable.shape), fix)
            )


def restore_model(
    checkpoint: tf.train.Checkpoint, path: str, check: Optional[Callable[[str], None]] = None
) -> None:
    """Restores ``path`` into ``checkpoint``'s objects for a command that uses a trained
    run (eval, decode, inference, export), after ``check_checkpoint``; what the checkpoint
    holds beyond them (the optimizer's state) is left out.

    Args:
      checkpoint: a ``tf.train.Checkpoint`` with the ``model`` (and what else the command
        restores).
      path: the checkpoint.
      check: ``path -> None``, the host's own check (``check_vocabulary``).

    Raises:
      CheckpointMismatchError: another model, or a variable of another size or shape.
    """
    check_checkpoint(path, checkpoint.model, check)
    checkpoint.restore(path).expect_partial()


def check_vocabulary(checkpoint_path: str, expected: Dict[str, Tuple[int, str]]) -> None:
    """Checks a checkpoint's embedding tables against the vocabularies of this run.

    Args:
      checkpoint_path: the checkpoint about to be restored.
      expected: variable path in the checkpoint (``"model/embedding/embeddings"``) ->
        ``(rows, where they come from)``, e.g. ``(50000, "--vocab_size=50000")``. Paths
        the checkpoint does not hold are skipped.

    Raises:
      CheckpointMismatchError: naming the checkpoint, both sizes and the fix.
    """
    shapes = tf.train.load_checkpoint(checkpoint_path).get_variable_to_shape_map()
    for name, (rows, source) in expected.items():
        shape = shapes.get(name + _VALUE)
        if shape is not None and shape[0] != rows:
            raise CheckpointMismatchError(
                "%s was trained with %d rows in %s, but %s gives %d; run with the "
                "vocabulary (file and size) it was trained with"
                % (checkpoint_path, shape[0], name, source, rows)
            )


def vocabulary_check(expected: Dict[str, Tuple[int, str]]) -> Callable[[str], None]:
    """The ``check`` of a host's checkpoints: ``check_vocabulary`` with the host's tables.

    Args:
      expected: variable path in the checkpoint -> ``(rows, the flags that give them)``,
        as ``check_vocabulary`` takes it.
    """
    return functools.partial(check_vocabulary, expected=expected)


def _saved_step(path: str) -> Optional[int]:
    """The global step a checkpoint holds (None: it holds none, as a converted one)."""
    reader = tf.train.load_checkpoint(path)
    key = "step" + _VALUE
    return int(reader.get_tensor(key)) if reader.has_tensor(key) else None


# --ckpt's names of a run's two checkpoints; any other value is a checkpoint's path.
BEST_KEY, LATEST_KEY = "best", "latest"
CKPT_HELP = "best (the best model), latest (the newest training checkpoint) or a path"


def _given_checkpoint(given: str, train_dir: str) -> str:
    """``--ckpt``'s path: a checkpoint's prefix, or a folder's newest checkpoint.

    Raises:
      CheckpointError: no checkpoint there; the message gives the run's newest checkpoint
        (in ``train_dir``) as an example of a path.
    """
    path = latest_checkpoint(given) if tf.io.gfile.isdir(given) else given
    if path is None or not tf.io.gfile.exists(path + ".index"):
        example = latest_checkpoint(train_dir)
        raise CheckpointError(
            "--ckpt=%s: no checkpoint there (a checkpoint's path ends before .index%s, or "
            "names its folder); give best, latest or such a path"
            % (given, ", as in %s" % example if example else "")
        )
    return path


def inference_checkpoint(
    train_dir: str,
    best: Optional[str] = None,
    given: Optional[str] = None,
    to_validate: str = "rerun the training command to validate it first",
    to_train: str = "train first or give --ckpt",
    newest: bool = False,
) -> Tuple[str, str]:
    """The checkpoint ``restore_for_inference`` restores with these arguments (see
    there), without restoring it: a command can check what depends on it first.

    Returns:
      ``(path, why)``: the checkpoint, and why it is the one (for the log line).

    Raises:
      CheckpointError: no checkpoint to restore (``--ckpt=best``: no best model).
    """
    if given == BEST_KEY:
        given, newest = None, False
        if best is None or latest_checkpoint(best) is None:
            raise CheckpointError(
                "--ckpt=best: %s holds no best model; %s, or give --ckpt=latest"
                % (best or train_dir, to_validate)
            )
    elif given == LATEST_KEY:
        given, newest = None, True
    elif given:
        given = _given_checkpoint(given, train_dir)
    if given or best is None or newest:
        path = given or latest_checkpoint(train_dir)
        why = "--ckpt" if given else _latest_why(train_dir, path)
    else:
        path = checkpoint_to_use(None, best, train_dir, to_validate)
        latest = path == latest_checkpoint(train_dir)
        why = _latest_why(train_dir, path) if latest else "the best model"
    if path is None:
        folders = train_dir if best is None or newest else "%s or %s" % (best, train_dir)
        raise CheckpointError("no checkpoint in %s; %s" % (folders, to_train))
    return path, why


def _latest_why(train_dir: str, path: Optional[str]) -> str:
    """Why the log names ``path``, the folder's latest checkpoint: the newest, or the
    one the ``checkpoint`` index names where newer ones are there."""
    if path and _newer_checkpoints(train_dir, os.path.basename(path)):
        return "the checkpoint the index names"
    return "the newest checkpoint"


def restore_for_inference(
    model: tf.Module,
    train_dir: str,
    best: Optional[str] = None,
    given: Optional[str] = None,
    check: Optional[Callable[[str], None]] = None,
    to_validate: str = "rerun the training command to validate it first",
    to_train: str = "train first or give --ckpt",
    newest: bool = False,
) -> Tuple[str, Optional[int]]:
    """Restores a run's model for a command that uses it (eval, decode, inference,
    export): ``given`` (``--ckpt``), else the best model of ``best``, else the newest
    checkpoint of ``train_dir`` (``checkpoint_to_use``), after ``check_checkpoint`` with
    ``check``; what the checkpoint holds beyond the model (the optimizer) is left out.
    One log line names the checkpoint, its step and why it was chosen.

    Args:
      model: the built model.
      train_dir: the folder of the run's training checkpoints.
      best: the run's best-model folder (``best_dir``); None: the newest checkpoint.
      given: the ``--ckpt`` flag's value: ``best``, ``latest``, a checkpoint's path, or
        None (the command's default).
      check: ``path -> None``, the host's ``vocabulary_check``.
      to_validate: how the run gets a best model, for the warning when it has none.
      to_train: what to do when there is no checkpoint at all, for the error.
      newest: restore the newest checkpoint even where ``best`` holds a best model (the
        summarizer's decode mode and NMT's inference, as their originals); the log line
        then names the best model when it is of another step, and how to restore it.

    Returns:
      ``(path, step)``: the checkpoint restored and its global step (None: it holds none).

    Raises:
      CheckpointError: no checkpoint to restore (``--ckpt=best``: no best model).
      CheckpointMismatchError: another model, or a variable of another size or shape.
    """
    path, why = inference_checkpoint(train_dir, best, given, to_validate, to_train, newest)
    by_path = bool(given) and given not in (BEST_KEY, LATEST_KEY)
    # where the chosen one cannot be read: the training checkpoints before it (all of
    # them after the best model), never another than the one --ckpt names (best, a path)
    older = [] if given and given != LATEST_KEY else found_checkpoints(train_dir)
    older = older[: older.index(path)] if path in older else older
    path, why = _restore_readable(tf.train.Checkpoint(model=model), path, why, check, older)
    step = _saved_step(path)
    logging.info("Restored %s%s: %s", path, "" if step is None else " (step %d)" % step, why)
    best_path = latest_checkpoint(best) if best and not by_path else None
    if best_path and best_path != path and _saved_step(best_path) != step:
        logging.info(
            "The run's best model is %s (step %s); --ckpt=%s restores it",
            best_path,
            _saved_step(best_path),
            best_path,
        )
    return path, step


def _restore_readable(checkpoint, path, why, check, older):
    """Restores ``path``, or where it cannot be read (a write cut short, a damaged data
    file) the newest readable of ``older`` (oldest first) with a warning, as a trainer
    falls back; returns ``(the checkpoint restored, why)``.

    Raises:
      CheckpointError: none of them can be read; names the one chosen and the fix.
    """
    candidates = [path] + older[::-1]
    for number, candidate in enumerate(candidates):
        try:
            restore_model(checkpoint, candidate, check)
            return candidate, why if not number else "the newest readable checkpoint"
        except UNREADABLE as e:
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            if number + 1 == len(candidates):
                raise CheckpointError(
                    "%s cannot be read (%s)%s; give --ckpt a checkpoint that can, or retrain"
                    % (path, reason, ", nor can an older one" if older else "")
                ) from e
            logging.warning(
                "Cannot read checkpoint %s (%s); falling back to %s",
                candidate,
                reason,
                candidates[number + 1],
            )


def remove_interrupted_saves(directory: str) -> None:
    """Removes the ``<prefix>_temp`` folders TensorFlow writes a checkpoint's shards to
    before it renames them into place, left behind when a save was killed.

    Only the process that owns ``directory`` (holds its trainer lock) may call this: a
    save in progress has the same folder.
    """
    if not os.path.isdir(directory):
        return
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name.endswith("_temp") and os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
            logging.warning("Removed %s, left by a checkpoint save that was interrupted", path)


# Looks at the folder between two reminders that no trainer writes it.
_LOOKS_PER_REMINDER = 60


def newest_checkpoints(
    directory: str,
    restore: Callable[[str], None],
    poll_secs: float = 10.0,
    trained: Optional[Callable[[], bool]] = None,
) -> Iterator[str]:
    """Restores and yields the newest checkpoint of a folder each time there is a new one.

    A job that follows a training run iterates over it and stops when it has what it
    needs. No checkpoint is yielded twice: when the newest one is the last one yielded,
    the generator waits (``poll_secs`` between looks) for the trainer to save another. A
    checkpoint that cannot be restored (the trainer deleted it between listing and
    restoring, or a kill left it unreadable) is skipped with a warning, and the folder is
    looked at again; errors that are not about reading it (``check`` mismatches raised by
    ``restore``) propagate.

    Args:
      directory: the trainer's checkpoint folder.
      restore: ``path -> None``, restores one checkpoint into the job's model.
      poll_secs: seconds between looks while there is no new checkpoint.
      trained: ``() -> bool``, whether a trainer writes the folder now; while one does
        not, the wait says so when it starts and every 60 looks (None: not said).

    Yields:
      The path of each checkpoint restored, newest first at each look.
    """
    done = None
    looks = 0  # while waiting
    while True:
        newest = latest_checkpoint(directory)
        if newest is None or newest == done:
            if not looks:
                logging.info("Waiting for a new checkpoint in %s", directory)
            if trained is not None and not looks % _LOOKS_PER_REMINDER and not trained():
                logging.warning(
                    "No trainer is writing %s: a new checkpoint comes only once the training "
                    "command runs (start it, or stop this job)",
                    directory,
                )
            looks += 1
            time.sleep(poll_secs)
            continue
        looks = 0
        done = newest
        try:
            restore(newest)
        except UNREADABLE as e:
            logging.warning(
                "Skipping checkpoint %s, which cannot be read (%s); looking for a newer one",
                newest,
                str(e).splitlines()[0] if str(e) else type(e).__name__,
            )
            continue
        yield newest


def checkpoint_step(path: str) -> int:
    """The global step a checkpoint of this project was saved at."""
    return int(tf.train.load_checkpoint(path).get_tensor("step" + _VALUE))


class Checkpointer:
    """A run's latest checkpoints and, optionally, its best model.

    A restore brings back everything but the learning rate of an optimizer whose rate is a
    variable: the run's own rate (``--lr``) wins, so a resume can lower it.

    Args:
      directory: the folder of the latest checkpoints.
      step: the run's int64 global-step variable; checkpoints are numbered by it.
      max_to_keep: how many latest checkpoints to keep.
      checkpoint_name: the checkpoints' file prefix (``model.ckpt`` in See's layout).
      best_dir: the folder of the best model (None: the run keeps none).
      best_name: the best model's file prefix (default: ``checkpoint_name``).
      best_to_keep: how many of the successive best models to keep.
      check: called with a checkpoint's path before it is restored (a vocabulary check);
        its errors are not a reason to fall back to an older checkpoint.
      scratch: None on the process that writes the run (the chief); on another worker
        of a multi-worker strategy, a folder of its own (``distribute.
        worker_scratch_dir``): every worker takes part in each save, as
        ``tf.distribute`` requires, but a worker's saves go there and are removed at
        once, while it restores from ``directory`` like the chief and keeps the same
        best score in memory.
      **objects: what the latest checkpoints hold besides ``step``: ``model``, and
        ``optimizer`` and the like; the best model holds ``model`` and ``step``.
    """

    def __init__(
        self,
        directory: str,
        step: tf.Variable,
        max_to_keep: int = 3,
        checkpoint_name: str = "ckpt",
        best_dir: Optional[str] = None,
        best_name: Optional[str] = None,
        best_to_keep: int = 1,
        check: Optional[Callable[[str], None]] = None,
        scratch: Optional[str] = None,
        **objects,
    ) -> None:
        self.directory = directory
        self.step = step
        self.check = check or (lambda path: None)
        self.scratch = scratch
        self.checkpoint = tf.train.Checkpoint(step=step, **objects)
        self._max_to_keep = max_to_keep
        self._name = checkpoint_name
        self._saved_step = None
        # optimizers whose learning rate is a variable (not a schedule): a checkpoint
        # restores it, and the run's own (its flags') must win
        self._rates = [
            o
            for o in objects.values()
            if isinstance(getattr(o, "_learning_rate", None), tf.Variable)
        ]
        self.best_dir = best_dir
        self._best_to_keep = best_to_keep
        self._best_name = best_name or checkpoint_name
        self.best = {}
        if best_dir is not None:
            record = os.path.join(best_dir, BEST_RECORD)
            if os.path.exists(record):
                self.best = files.read_json(
                    record,
                    "delete it to start a new record (the next evaluation's model becomes "
                    "the best)",
                )

    def _manager(self, checkpoint, directory, sub, max_to_keep, name):
        """The ``tf.train.CheckpointManager`` of ``directory`` on the chief, after
        ``_repair_index``; of the worker's ``scratch/sub`` on another worker."""
        if self.scratch is not None:
            directory = os.path.join(self.scratch, sub)
        else:
            _repair_index(directory, name)
        return tf.train.CheckpointManager(
            checkpoint, directory, max_to_keep=max_to_keep, checkpoint_name=name
        )

    @functools.cached_property
    def manager(self) -> tf.train.CheckpointManager:
        """The latest checkpoints' manager, made on first use: a job that only reads
        ``directory`` (an eval job, which keeps the best model) never rewrites its index."""
        return self._manager(
            self.checkpoint, self.directory, "latest", self._max_to_keep, self._name
        )

    @functools.cached_property
    def best_manager(self) -> Optional[tf.train.CheckpointManager]:
        """The best model's manager (None: the run keeps none), made on first use."""
        if self.best_dir is None:
            return None
        best = tf.train.Checkpoint(model=self.checkpoint.model, step=self.step)
        return self._manager(best, self.best_dir, "best", self._best_to_keep, self._best_name)

    @property
    def latest(self) -> Optional[str]:
        """The newest checkpoint's path, or None."""
        if self.scratch is not None:
            return latest_checkpoint(self.directory)
        return self.manager.latest_checkpoint

    @property
    def write_dir(self) -> str:
        """The folder this process writes checkpoints to (``directory`` on the chief)."""
        return self.manager.directory

    def _listed(self) -> list:
        """The checkpoints of ``directory``, oldest first."""
        if self.scratch is None:
            return list(self.manager.checkpoints)
        named, problem = _read_index(self.directory, trainer=True)
        if named and problem is None:  # what the chief's manager lists
            return list(tf.train.get_checkpoint_state(self.directory).all_model_checkpoint_paths)
        return _rebuilt_view(self.directory, self._name)[0]

    def restore(self, path: str) -> None:
        """Restores ``path`` into the model and step (and what else this holds) for a job
        that reads the run (an eval job), after ``check_checkpoint`` with ``check``; the
        optimizer's state is left out (``restore_model``)."""
        restore_model(self.checkpoint, path, self.check)

    def _save_to_scratch(self, manager: tf.train.CheckpointManager) -> None:
        """A worker's part in a save, written to its scratch folder and removed."""
        manager.save(checkpoint_number=int(self.step))
        shutil.rmtree(manager.directory, ignore_errors=True)

    def restore_latest(self) -> Optional[str]:
        """Restores the newest readable checkpoint; returns its path (None: a new run).

        Raises:
          CheckpointError: when the folder lists checkpoints and none can be read.
        """
        candidates = list(reversed(self._listed()))
        for number, path in enumerate(candidates):
            rates = [_value(o._learning_rate) for o in self._rates]
            try:
                check_checkpoint(path, self.checkpoint.model, self.check, resuming=True)
                self.checkpoint.restore(path).expect_partial()
            except (*UNREADABLE, ValueError) as e:
                if isinstance(e, CheckpointMismatchError):  # readable, of another model
                    raise
                later = candidates[number + 1] if number + 1 < len(candidates) else None
                logging.warning(
                    "Cannot read checkpoint %s (%s); %s",
                    path,
                    str(e).splitlines()[0] if str(e) else type(e).__name__,
                    "falling back to %s" % later if later else "no older checkpoint left",
                )
                continue
            self._saved_step = int(self.step)
            logging.info("Restored %s (step %d)", path, int(self.step))
            for optimizer, rate in zip(self._rates, rates):
                if _value(optimizer._learning_rate) != rate:
                    logging.info(
                        "Learning rate %g (this run's) replaces the checkpoint's %g",
                        rate,
                        _value(optimizer._learning_rate),
                    )
                    optimizer._learning_rate.assign(rate)
            return path
        if candidates:
            raise CheckpointError(
                "no checkpoint in %s can be read (%s); move the folder away to start afresh"
                % (self.directory, ", ".join(os.path.basename(p) for p in candidates))
            )
        return None

    def save(self) -> str:
        """Saves the current step unless the latest checkpoint already holds it.

        Returns:
          The latest checkpoint's path.
        """
        step = int(self.step)
        if step != self._saved_step or self.latest is None:
            if self.scratch is not None:
                self._save_to_scratch(self.manager)
            else:
                logging.info("Saved %s", self.manager.save(checkpoint_number=step))
            self._saved_step = step
        return self.latest

    @property
    def best_value(self) -> Optional[float]:
        """The score of the best model so far (kept across restarts), or None."""
        return self.best.get("value")

    @property
    def stale(self) -> int:
        """How many scores in a row have not beaten the best (kept across restarts)."""
        return self.best.get("stale", 0)

    @property
    def last_validated(self) -> int:
        """The step of the last score ``best.json`` records (0: none). A record without
        it, written before it was kept, counts its best model's step."""
        return self.best.get("last_validated", self.best.get("step", 0))

    def save_best(
        self,
        value: float,
        higher_is_better: bool = True,
        tie_key: Optional[str] = None,
        **record,
    ) -> bool:
        """Keeps the model as the best one when ``value`` beats the best so far, or equals
        it with a lower ``record[tie_key]``.

        ``best.json`` in the best model's folder holds the best score, its step,
        ``record``, ``stale``, the scores since then that did not beat it (for early
        stopping across restarts), and ``last_validated``, the step of this score (a
        resume runs a validation that was due and is not recorded).

        Args:
          value: the model's score now.
          higher_is_better: False for a loss.
          tie_key: the entry of ``record`` that decides between equal scores, a loss
            (lower wins): a BLEU of 0.0 at two steps, say. A best score recorded without
            it loses the tie.
          **record: more to keep with the best score (its other metrics).

        Returns:
          Whether the model was saved as the new best.
        """
        tie_loss = record.get(tie_key) if tie_key else None
        if not self._beats_best(value, higher_is_better, tie_key, tie_loss):
            self.best["stale"] = self.stale + 1
            improved = False
        else:
            if self.scratch is not None:
                self._save_to_scratch(self.best_manager)
            else:
                path = self.best_manager.save(checkpoint_number=int(self.step))
                logging.info("New best model (%g) saved in %s", value, path)
            self.best = dict(record, value=value, step=int(self.step), stale=0)
            improved = True
        self.best["last_validated"] = int(self.step)
        if self.scratch is None:
            files.atomic_write_text(
                os.path.join(self.best_dir, BEST_RECORD), json.dumps(self.best, indent=2) + "\n"
            )
        return improved

    def _beats_best(self, value, higher_is_better, tie_key, tie_loss) -> bool:
        """Whether ``value`` (with ``tie_loss``, the record's ``tie_key``) beats the best."""
        best = self.best_value
        if best is None or value != best:
            return best is None or (value > best if higher_is_better else value < best)
        recorded = self.best.get(tie_key) if tie_key else None
        return tie_loss is not None and (recorded is None or tie_loss < recorded)

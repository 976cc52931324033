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
- a checkpoint of other vocabulary sizes is refused with one line naming both sizes;
- the folder a trainer owns loses the ``*_temp`` folders of saves a kill interrupted
  (``remove_interrupted_saves``).

A job that follows a training run (an eval job, a decoder) takes each new checkpoint once
through ``newest_checkpoints``, which waits for the next one and steps over a checkpoint
that disappears between listing and restoring.
"""

import json
import os
import re
import shutil
import time
from traceback import walk_tb
from types import TracebackType
from typing import Callable, Dict, Iterator, Optional, Tuple

import tensorflow as tf
from absl import logging

from acvi_tf import errors, files

_VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"
BEST_RECORD = "best.json"

# What reading a damaged or vanished checkpoint raises: TensorFlow's errors, and
# IndexError from the reader of a truncated data file ("Read less bytes than requested").
UNREADABLE = (tf.errors.OpError, IndexError)


# TensorFlow's message when a checkpoint's variable has another shape than the model's.
_SHAPE_MISMATCH = re.compile(
    r"incompatible tensor with shape (?P<saved>\(.*?\)) when attempting to restore "
    r"variable with shape (?P<new>\(.*?\)) and name (?P<name>[^ ]+?)\.?$",
    re.M,
)


def _value(variable: tf.Variable) -> float:
    """A scalar variable's value, also of a strategy's mirrored variable."""
    return float(tf.convert_to_tensor(variable))


class CheckpointMismatchError(errors.UserError, ValueError):
    """A checkpoint was trained with other vocabulary sizes than the flags give."""


class CheckpointError(errors.UserError, RuntimeError):
    """No checkpoint of a folder can be read; the message names the folder and the fix."""


def _shape_mismatch(path: str, error: Exception, fix: str) -> Optional[CheckpointMismatchError]:
    """The ``CheckpointMismatchError`` of a restore that failed on a variable of another
    shape (None for any other error), naming the variable, both shapes and ``fix``."""
    shapes = _SHAPE_MISMATCH.search(str(error))
    if not shapes:
        return None
    return CheckpointMismatchError(
        "%s holds %s with shape %s, this model's has shape %s: the run was trained with "
        "other model flags; %s"
        % (path, shapes.group("name"), shapes.group("saved"), shapes.group("new"), fix)
    )


def _expect_partial(traceback: TracebackType) -> None:
    """Marks the restore that raised as partial, as ``expect_partial()`` does a finished
    one: otherwise TensorFlow lists every value it left, one warning line each, when the
    half-done restore is collected (in the frames of ``traceback``)."""
    for frame, _ in walk_tb(traceback):
        for value in frame.f_locals.values():
            if type(value).__name__ == "_CheckpointRestoreCoordinator":
                value.expect_partial = True


def restore_model(checkpoint: tf.train.Checkpoint, path: str) -> None:
    """Restores ``path`` into ``checkpoint``'s objects for a command that uses a trained
    run (eval, decode, inference, export); what the checkpoint holds beyond them (the
    optimizer's state) is left out.

    Raises:
      CheckpointMismatchError: a variable of another shape, named with both shapes.
    """
    try:
        checkpoint.restore(path).expect_partial()
    except ValueError as e:
        _expect_partial(e.__traceback__)
        mismatch = _shape_mismatch(
            path,
            e,
            "give the flags it was trained with (a run without hparams.json needs them on "
            "the command line), or a checkpoint of this run",
        )
        if mismatch is None:
            raise
        raise mismatch from e


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


def newest_checkpoints(
    directory: str,
    restore: Callable[[str], None],
    poll_secs: float = 10.0,
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

    Yields:
      The path of each checkpoint restored, newest first at each look.
    """
    done = None
    waiting = False
    while True:
        state = tf.train.get_checkpoint_state(directory)
        newest = state.model_checkpoint_path if state else None
        if newest is None or newest == done:
            if not waiting:
                logging.info("Waiting for a new checkpoint in %s", directory)
                waiting = True
            time.sleep(poll_secs)
            continue
        waiting = False
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
      **objects: what the latest checkpoints hold besides ``step`` (``model``,
        ``optimizer``, ...); the best model holds ``model`` and ``step``.
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
        self.manager = tf.train.CheckpointManager(
            self.checkpoint,
            directory if scratch is None else os.path.join(scratch, "latest"),
            max_to_keep=max_to_keep,
            checkpoint_name=checkpoint_name,
        )
        self._saved_step = None
        # optimizers whose learning rate is a variable (not a schedule): a checkpoint
        # restores it, and the run's own (its flags') must win
        self._rates = [
            o
            for o in objects.values()
            if isinstance(getattr(o, "_learning_rate", None), tf.Variable)
        ]
        self.best_dir = best_dir
        self.best_manager = None
        self.best = {}
        if best_dir is not None:
            self.best_manager = tf.train.CheckpointManager(
                tf.train.Checkpoint(model=objects["model"], step=step),
                best_dir if scratch is None else os.path.join(scratch, "best"),
                max_to_keep=best_to_keep,
                checkpoint_name=best_name or checkpoint_name,
            )
            record = os.path.join(best_dir, BEST_RECORD)
            if os.path.exists(record):
                self.best = files.read_json(
                    record,
                    "delete it to start a new record (the next evaluation's model becomes "
                    "the best)",
                )

    @property
    def latest(self) -> Optional[str]:
        """The newest checkpoint's path, or None."""
        if self.scratch is not None:
            return tf.train.latest_checkpoint(self.directory)
        return self.manager.latest_checkpoint

    @property
    def write_dir(self) -> str:
        """The folder this process writes checkpoints to (``directory`` on the chief)."""
        return self.manager.directory

    def _listed(self) -> list:
        """The checkpoints of ``directory``, oldest first."""
        if self.scratch is None:
            return list(self.manager.checkpoints)
        state = tf.train.get_checkpoint_state(self.directory)
        return list(state.all_model_checkpoint_paths) if state else []

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
                self.check(path)
                self.checkpoint.restore(path).expect_partial()
            except (*UNREADABLE, ValueError) as e:
                if isinstance(e, CheckpointMismatchError):
                    raise
                mismatch = _shape_mismatch(
                    path, e, "its hparams.json records them: run with those, or give a new folder"
                )
                if mismatch:  # a readable checkpoint of another model: no fallback
                    raise mismatch from e
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

"""The training loop every host runs.

One ``Trainer.train`` call runs a host's compiled ``train_step`` (``training.
make_train_step``) over a stream of batches and does, after each step, what every run
needs: the ``--nan_policy`` guard, the global step, a progress line, TensorBoard scalars,
checkpoints by steps or by seconds, and validation with the best model kept and early
stopping. The host keeps only what is its own: its data, its step function, its
validation and any log lines of its original code base (``after_step``).
"""

import os
import shutil
import sys
import time
from typing import IO, Callable, Dict, Iterable, Iterator, Optional, Tuple

import tensorflow as tf
from absl import logging

from acvi_tf import files, progress
from acvi_tf.process import stops
from acvi_tf.training import checkpoints
from acvi_tf.training import step as training_lib

# The file a trainer holds locked in its checkpoint folder while it runs.
LOCK_FILE = "trainer.lock"


def lock_folder(directory: str, job: str = "trainer"):
    """Locks ``directory`` for this process (released when it exits, however it exits),
    with the lock file inside it.

    Args:
      directory: the folder the process writes.
      job: what the process is (``"trainer"``, ``"eval job"``), for the error message.

    Returns:
      The open lock file; keep it referenced as long as the lock should hold.

    Raises:
      files.FolderInUseError: another process holds the lock.
    """
    os.makedirs(directory, exist_ok=True)
    return files.lock_file(os.path.join(directory, LOCK_FILE), directory, job)


def in_use(directory: str) -> bool:
    """Whether a process holds ``directory``'s ``lock_folder`` lock now.

    Args:
      directory: the folder a trainer locks.
    """
    try:
        refuse_in_use(directory)
    except files.FolderInUseError:
        return True
    return False


def refuse_in_use(directory: str, job: str = "trainer") -> None:
    """Refuses ``directory`` while a process holds its ``lock_folder`` lock: the check a
    command makes before it restores or writes anything there (the lock itself is taken
    later, where the work starts).

    Args:
      directory: the folder a trainer locks.
      job: what holds the lock, for the error message.

    Raises:
      files.FolderInUseError: another process holds the lock.
    """
    path = os.path.join(directory, LOCK_FILE)
    if os.path.exists(path):
        files.locked(path, directory, job).close()


def trains_alone() -> bool:
    """Whether this process trains without other workers (no multi-worker strategy)."""
    resolver = getattr(tf.distribute.get_strategy(), "cluster_resolver", None)
    return resolver is None or not resolver.task_type


# A step's results: scalar tensors by name, as the step function returns them.
Results = Dict[str, tf.Tensor]


class Trainer:
    """Steps, guards, logs, checkpoints and validates one training run.

    Used as a context manager (``with Trainer(...) as trainer:``) it holds the checkpoint
    folder locked (``lock_folder``), so a second trainer of the same run stops with one
    line instead of writing the same checkpoints, removes what interrupted saves left in
    its folders (``checkpoints.remove_interrupted_saves``), and runs the validation of
    the restored step if it was due and ``best.json`` does not record it (a kill between
    the step's checkpoint and that record). SIGINT and SIGTERM in the block stop training
    after the step in progress: the trainer saves that step and raises ``stops.Stopped``
    (``stop_if_asked``). In a multi-worker run, where a save takes every worker and a
    worker that stops blocks the others in the step, they end the process at once, as by
    default (``stops.SystemDefault``).

    Args:
      checkpointer: the run's ``checkpoints.Checkpointer``; its ``step`` variable is the
        global step, already restored.
      total_steps: the step training ends at.
      writer: the ``tf.summary`` writer of the training scalars.
      context_layer: the model's context layer, asked each step whether Gumbel-softmax
        sampling is on (``gumbel_active``); None: never.
      loss_key: the results entry the guard checks and the progress line shows.
      tokens_key: the results entry that counts the step's target tokens, for the
        progress line (None: no progress line); it is not written to TensorBoard.
      nan_policy: ``training_lib.NAN_POLICIES``.
      summary_every: write every results entry to TensorBoard each this many steps
        (0: never).
      checkpoint_every: save each this many steps (0: not by steps).
      checkpoint_secs: save when this many seconds have passed since the last save
        (0: not by time).
      validate: ``step -> (score, record)``, the validation score and what to keep with
        it in ``best.json``; None: no validation in the loop.
      validate_every: validate each this many steps, and at ``total_steps``; a
        validation is part of its step, so a resume first runs one that was due at the
        restored step and that ``best.json`` does not record.
      metric: the score's name, for ``best.json`` and the log.
      higher_is_better: False for a loss.
      tie_key: the entry of the validation's record that breaks a tie of scores, a loss
        (lower wins; ``Checkpointer.save_best``); None: the earlier model stays.
      patience: stop after this many validations in a row without a new best (0: never).
      describe: ``batch -> str`` naming a skipped batch in the log.
      after_step: ``(step, results, batch) -> None``, the host's own per-step logging.
      lock: the checkpoint folder's ``lock_folder`` lock, taken by the caller before it
        wrote there (its event file), so that a trainer refused by another's lock adds
        nothing to the other's folder; the trainer releases it. None: the trainer takes it.
    """

    def __init__(
        self,
        checkpointer: checkpoints.Checkpointer,
        total_steps: int,
        writer=None,
        context_layer=None,
        loss_key: str = "loss",
        tokens_key: Optional[str] = "tokens",
        nan_policy: str = "stop",
        summary_every: int = 1,
        checkpoint_every: int = 0,
        checkpoint_secs: float = 0.0,
        validate: Optional[Callable[[int], Tuple[float, dict]]] = None,
        validate_every: int = 0,
        metric: str = "score",
        higher_is_better: bool = True,
        tie_key: Optional[str] = None,
        patience: int = 0,
        describe: Optional[Callable[[Results], str]] = None,
        after_step: Optional[Callable[[int, Results, Results], None]] = None,
        lock: Optional[IO[str]] = None,
    ):
        self.checkpointer = checkpointer
        self.total_steps = total_steps
        self.writer = writer
        self.context_layer = context_layer
        self.loss_key = loss_key
        self.tokens_key = tokens_key
        self.guard = training_lib.NonFiniteGuard(nan_policy, writer)
        self.progress = progress.Progress(total_steps, longest=300.0) if tokens_key else None
        self.summary_every = summary_every
        self.checkpoint_every = checkpoint_every
        self.checkpoint_secs = checkpoint_secs
        self.validate = validate
        self.validate_every = validate_every
        self.metric = metric
        self.higher_is_better = higher_is_better
        self.tie_key = tie_key
        self.patience = patience
        self.describe = describe
        self.after_step = after_step
        self._last_save = time.time()
        self._lock = lock
        self._signals = stops.Deferred("; rerun the same command to resume")

    def __enter__(self) -> "Trainer":
        self._lock = self._lock or lock_folder(self.checkpointer.write_dir)
        if not trains_alone():
            self._signals = stops.SystemDefault()
        self._signals.__enter__()
        best = self.checkpointer.best_manager
        for folder in (self.checkpointer.write_dir, best and best.directory):
            if folder:
                checkpoints.remove_interrupted_saves(folder)
        try:
            self._validate_unrecorded()
        except BaseException:
            self.__exit__(*sys.exc_info())  # a with statement does not when __enter__ raises
            raise
        return self

    def __exit__(self, exc_type, *exc_info) -> None:
        try:
            if exc_type is None:
                self.stop_if_asked()
        finally:
            self._release()

    def _release(self) -> None:
        self._signals.__exit__()
        self._lock.close()  # releases the lock
        self._lock = None
        if self.checkpointer.scratch is not None:  # a worker's own folder, not the run's
            shutil.rmtree(self.checkpointer.scratch, ignore_errors=True)

    @property
    def step(self) -> int:
        """The global step."""
        return int(self.checkpointer.step)

    @property
    def out_of_patience(self) -> bool:
        """Whether ``patience`` validations in a row brought no new best."""
        return bool(self.patience) and self.checkpointer.stale >= self.patience

    @property
    def finished(self) -> bool:
        """Whether training is over: the last step is done, or patience ran out."""
        return self.step >= self.total_steps or self.out_of_patience

    def train(
        self,
        batches: Iterable[Results],
        train_step: Callable[[Results, tf.Tensor, tf.Tensor], Results],
        until: Optional[int] = None,
    ) -> None:
        """Trains on ``batches`` until they run out, the step reaches ``until`` (default:
        ``total_steps``) or training is ``finished``.

        Args:
          batches: the batches, each what ``train_step`` takes.
          train_step: ``(batch, use_gumbel, step) -> results``.
          until: the step this call stops at (a curriculum phase's end).

        Raises:
          stops.Stopped: after SIGINT or SIGTERM, once the step is saved; the batches'
            iterator goes with it (``Stopped.kept``), not torn down.
        """
        until = min(until or self.total_steps, self.total_steps)
        batches = iter(batches)
        try:
            self._train_until(batches, train_step, until)
        except stops.Stopped as stopped:
            stopped.kept.append(batches)
            raise

    def _train_until(
        self,
        batches: Iterator[Results],
        train_step: Callable[[Results, tf.Tensor, tf.Tensor], Results],
        until: int,
    ) -> None:
        """``train``'s loop over an iterator of the batches."""
        for batch in batches:
            self.stop_if_asked()
            step = self.step
            if step >= until or self.out_of_patience:
                return
            use_gumbel = (
                self.context_layer.gumbel_active(step, self.total_steps)
                if self.context_layer is not None
                else tf.constant(False)
            )
            results = train_step(batch, use_gumbel, tf.constant(step, tf.int64))
            describe = self.describe and (lambda: self.describe(batch))
            loss = float(results[self.loss_key])
            if not self.guard.check(loss, step, self.checkpointer.latest, describe):
                continue
            step += 1
            self.checkpointer.step.assign(step)
            self._log(step, results, batch)
            by_steps = self.checkpoint_every and step % self.checkpoint_every == 0
            by_time = self.checkpoint_secs and time.time() - self._last_save >= self.checkpoint_secs
            if by_steps or by_time:
                self.save()
            if self._validation_due(step):
                self._validate(step)

    def save(self) -> str:
        """Saves the latest checkpoint (once per step); returns its path."""
        self._last_save = time.time()
        return self.checkpointer.save()

    def stop_if_asked(self) -> None:
        """Saves the step and stops when a signal asked for it.

        Raises:
          stops.Stopped: after SIGINT or SIGTERM, with one line naming the checkpoint.
        """
        signum = self._signals.signum
        if signum is None:
            return
        path = self.save()
        if self.writer is not None:
            self.writer.flush()
        logging.warning(
            "Stopped by %s at step %d; saved %s%s",
            stops.name(signum),
            self.step,
            path,
            self._signals.hint,
        )
        raise stops.Stopped(signum)

    def _log(self, step: int, results: Results, batch: Results) -> None:
        if self.progress is not None:
            self.progress.update(
                step,
                int(results[self.tokens_key]),
                **{self.loss_key: float(results[self.loss_key])},
            )
        if self.summary_every and step % self.summary_every == 0 and self.writer is not None:
            with self.writer.as_default(step=step):
                for name, value in results.items():
                    if name != self.tokens_key:
                        tf.summary.scalar(name, value)
        if self.after_step is not None:
            self.after_step(step, results, batch)

    def _validation_due(self, step: int) -> bool:
        """Whether ``step`` validates: a validation step whose score ``best.json`` does
        not hold yet (a run that fell back to an older checkpoint reaches recorded steps
        again, and their validations count once)."""
        return (
            self.validate is not None
            and step > self.checkpointer.last_validated
            and (
                (self.validate_every and step % self.validate_every == 0)
                or step == self.total_steps
            )
        )

    def _validate_unrecorded(self) -> None:
        """Runs the validation of the restored step when it is due: the run stopped
        between the step's checkpoint and the record of its validation, which is part of
        the step. Also when the run had reached its last step."""
        step = self.step
        if self._validation_due(step):
            logging.info("Validating step %d, which the run had not recorded when it stopped", step)
            self._validate(step)

    def _validate(self, step: int) -> None:
        self.save()
        score, record = self.validate(step)
        self.checkpointer.save_best(
            score, self.higher_is_better, tie_key=self.tie_key, metric=self.metric, **record
        )
        if self.out_of_patience:
            logging.info(
                "no better validation %s for %d validations: stopping",
                self.metric,
                self.checkpointer.stale,
            )

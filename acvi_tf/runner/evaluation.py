"""The Runner's eval job, the same for every host: beside a training run, it scores each
new checkpoint of the run's checkpoint folder once, writes the scores to TensorBoard in
a folder of its own, keeps the best model, and ends once it has scored the training's
last step. A host builds the job (model, checkpointer, how a checkpoint is scored) and
hands it over as an ``EvalRun``; ``drive`` runs it.
"""

import dataclasses
import functools
import os
from typing import Callable, Dict, Optional, Tuple

import tensorflow as tf
from absl import logging

from acvi_tf.training import checkpoints
from acvi_tf.training import trainer as trainer_lib


@dataclasses.dataclass(frozen=True)
class EvalRun:
    """A host's eval job, built once the job's folder is locked.

    Attributes:
      checkpointer: reads the training checkpoints (never writes them) into the job's
        model and keeps the best model in its best-model folder.
      total: the step the training ends at; the job ends once it has scored it.
      ends_by: what sets ``total``, for the log line at the end (``--max_steps``).
      score: ``(step, checkpoint path) -> (metrics, batches)``: the restored model's
        scores on the validation data, and over how many batches. It runs with the job's
        writer as the default at ``step``, so what else it writes to TensorBoard
        (samples, running averages) is the step's too.
      metric: the name of the metric that picks the best model.
      higher_is_better: whether a higher ``metric`` is better.
    """

    checkpointer: checkpoints.Checkpointer
    total: int
    ends_by: str
    score: Callable[[int, str], Tuple[Dict[str, float], int]]
    metric: str = "loss"
    higher_is_better: bool = False


def drive(event_dir: str, best_dir: str, build: Callable[[], EvalRun]) -> Optional[float]:
    """Runs the eval job whose TensorBoard logs go to ``event_dir`` and whose best model
    goes to ``best_dir``, until it has scored the training's last step.

    The job's folder is locked first (a second eval job of the run stops in one line),
    and a best model whose save was cut short is removed, before ``build`` makes the
    job. A rerun on a run whose last step is scored ends at once. Each new checkpoint
    is scored once, when the trainer has written it (``checkpoints.newest_checkpoints``).

    Args:
      event_dir: the eval job's folder: its lock and its event file.
      best_dir: the best-model folder of the job's checkpointer.
      build: ``() -> EvalRun``, the host's job.

    Returns:
      The best model's score.
    """
    lock = trainer_lib.lock_folder(event_dir, job="eval job")  # held while the job runs
    checkpoints.remove_interrupted_saves(best_dir)
    run = build()
    checkpointer = run.checkpointer
    if checkpointer.last_validated >= run.total:  # a rerun on a finished run
        lock.close()
        logging.info(
            "The eval job ends: %s records the score of step %d, the last of the run's "
            "training (%s end at step %d); remove it to score again",
            os.path.join(best_dir, checkpoints.BEST_RECORD),
            checkpointer.last_validated,
            run.ends_by,
            run.total,
        )
        return checkpointer.best_value
    writer = tf.summary.create_file_writer(event_dir)
    train_dir = checkpointer.directory
    trained = functools.partial(trainer_lib.in_use, train_dir)
    for path in checkpoints.newest_checkpoints(train_dir, checkpointer.restore, trained=trained):
        step = int(checkpointer.step)
        with writer.as_default(step=step):
            metrics, batches = run.score(step, path)
            for name, value in metrics.items():
                tf.summary.scalar(name, value)
        writer.flush()
        logging.info(
            "eval step %d: %s %.4f (mean of %d validation batches; %s)",
            step,
            run.metric,
            metrics[run.metric],
            batches,
            os.path.basename(path),
        )
        checkpointer.save_best(
            metrics[run.metric], higher_is_better=run.higher_is_better, batches=batches
        )
        if step >= run.total:  # training is over and its last checkpoint scored
            lock.close()
            logging.info(
                "The eval job ends: step %d is the last of the run's training (%s end at step %d)",
                step,
                run.ends_by,
                run.total,
            )
            return checkpointer.best_value

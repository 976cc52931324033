"""The Runner's training loop, the same for every host: a host builds its run (model,
optimizer, checkpointer restored, data) in its distribution strategy's scope and hands it
over as a ``TrainingRun``; ``drive`` locks the run's checkpoint folder, opens the event
file, and steps, guards, checkpoints and validates it in a
``acvi_tf.training.trainer.Trainer`` until the run's last step or a stop.
"""

import dataclasses
from typing import Any, Callable, Dict

import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.training import checkpoints, distribute
from acvi_tf.training import trainer as trainer_lib


@dataclasses.dataclass(frozen=True)
class TrainingRun:
    """A host's training run, built in the distribution strategy's scope with its newest
    checkpoint restored.

    Attributes:
      model: the model; the trainer asks its context layer each step whether
        Gumbel-softmax sampling is on.
      checkpointer: the run's checkpointer, restored.
      total: the step training ends at.
      event_dir: the folder of the training event file (the chief's).
      options: ``writer -> the Trainer's other keyword arguments`` (the loss's name, the
        schedules, the validation, the host's per-step logging), made once the folder is
        locked and the writer open, since the host's logging writes with it.
      feed: ``trainer -> None``, the host's passes over its training data
        (``trainer.train``) until ``trainer.finished``: one dataset, a new order each
        pass, or a curriculum's phases.
    """

    model: keras.Model
    checkpointer: checkpoints.Checkpointer
    total: int
    event_dir: str
    options: Callable[[tf.summary.SummaryWriter], Dict[str, Any]]
    feed: Callable[[trainer_lib.Trainer], None]


def drive(run: TrainingRun, strategy: tf.distribute.Strategy) -> None:
    """Trains ``run`` under ``strategy`` to its last step, or until a signal stops it
    after a saved step (``acvi_tf.process.stops.Stopped``).

    The checkpoint folder is locked before the event file is opened, so a trainer that
    another's lock refuses leaves no file in the other's folder; a worker other than the
    chief writes no event file.

    Args:
      run: the host's run.
      strategy: the distribution strategy it was built under (and runs in).
    """
    with trainer_lib.lock_folder(run.checkpointer.write_dir) as lock:
        writer = (
            tf.summary.create_file_writer(run.event_dir)
            if distribute.is_chief(strategy)
            else tf.summary.create_noop_writer()
        )
        with trainer_lib.Trainer(
            run.checkpointer,
            run.total,
            writer,
            run.model.context_layer,
            lock=lock,
            **run.options(writer),
        ) as trainer:
            run.feed(trainer)
        writer.flush()

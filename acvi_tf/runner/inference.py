"""The Runner's decode of a trained run, the same for every host (the summarizer's
decode mode, NMT's inference, the captioner's decode): the checkpoint is chosen
(``--ckpt``, else the best model or the newest checkpoint), what depends on it is
refused before the model is built, then the model is built and restored
(``acvi_tf.runner.restoring``), then the host decodes with it. A host checks its outputs
and builds the decode, and hands it over as an ``InferenceRun``; ``drive`` runs it.
"""

import dataclasses
from typing import Any, Callable, Optional

from acvi_tf.compat import keras
from acvi_tf.config import Config
from acvi_tf.runner import restoring
from acvi_tf.runner.task import Task


@dataclasses.dataclass(frozen=True)
class InferenceRun:
    """A host's decode of a trained run.

    Attributes:
      vocabularies: the run's loaded vocabulary (or vocabularies), which the restore
        checks against the checkpoint and the run's record.
      build: ``() -> model``, the run's model with every variable built.
      decode: ``(model, checkpoint path, step) -> result``: the host's search over its
        inputs with the restored model, its outputs written, scored and reported (step
        None: the checkpoint holds none).
      refuse: ``checkpoint path -> None``, given the checkpoint the decode will restore,
        refuses what makes the decode useless (the summarizer's finished decode folder of
        that checkpoint) before the model is built; None: nothing depends on the
        checkpoint.
      newest: restore the newest checkpoint even where the run has a best model, as See's
        decode mode and tensorflow/nmt's inference do (default: the best model).
      preprocessing: the decode turns raw text into the model's units, so the files
        that do it count in the check of the run's vocabularies
        (``restoring.vocabulary_check``).
    """

    vocabularies: Any
    build: Callable[[], keras.Model]
    decode: Callable[[keras.Model, str, Optional[int]], Any]
    refuse: Optional[Callable[[str], None]] = None
    newest: bool = False
    preprocessing: bool = False


def drive(task: Task, config: Config, run: InferenceRun) -> Any:
    """Runs ``run``, the decode of the trained run of ``task`` that ``config`` describes,
    with ``--ckpt``'s checkpoint, else the best model (or, with ``run.newest``, the
    newest checkpoint).

    Args:
      task: the run's host.
      config: the command's settings.
      run: the host's decode.

    Returns:
      ``run.decode``'s result.

    Raises:
      acvi_tf.training.checkpoints.CheckpointError: the run holds no checkpoint.
      acvi_tf.training.checkpoints.CheckpointMismatchError: a checkpoint of another model.
      acvi_tf.errors.UserError: what ``run.refuse`` refuses.
    """
    if run.refuse is not None:
        run.refuse(restoring.checkpoint_to_restore(task, config, config.ckpt, newest=run.newest))
    model = run.build()
    path, step = restoring.restore(
        task,
        config,
        model,
        run.vocabularies,
        config.ckpt,
        newest=run.newest,
        preprocessing=run.preprocessing,
    )
    return run.decode(model, path, step)

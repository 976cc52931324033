"""How the Runner restores a trained run's model for any host (``Task``): the checkpoint
a command chooses (``--ckpt``, else the best model, else the newest) in the Task's
folders, checked first against the run's vocabularies (their sizes in the checkpoint's
tables, their fingerprints in the run's record).
"""

from typing import Any, Callable, Dict, Optional, Tuple

import tensorflow as tf

from acvi_tf import flags as acvi_flags
from acvi_tf.config import Config
from acvi_tf.runner.task import Task
from acvi_tf.training import checkpoints


def vocabulary_check(
    task: Task, config: Config, vocabularies: Any, *, preprocessing: bool = False
) -> Callable[[str], None]:
    """The check that refuses a checkpoint trained with other vocabularies: tables of
    other sizes (``task.embeddings``), or other words than the run's record holds
    (``task.vocabulary_record``), unless ``--allow_data_change``.

    Args:
      task: the run's host.
      config: the command's settings.
      vocabularies: the host's loaded vocabulary (or vocabularies).
      preprocessing: the command turns raw text into the model's units, so the files
        that do it count too (``Task.vocabulary_record``).

    Returns:
      ``checkpoint path -> None``, raising ``acvi_tf.flags.FlagChangeError`` or
      ``checkpoints.CheckpointMismatchError`` for a refused checkpoint.
    """
    sizes = checkpoints.vocabulary_check(task.embeddings(config, vocabularies))
    record = task.vocabulary_record(config, vocabularies, preprocessing)
    return acvi_flags.vocabulary_checks(
        task.run_dir(config), record, sizes, config.allow_data_change
    )


def _choice(task: Task, config: Config, ckpt: Optional[str], newest: bool) -> Dict[str, Any]:
    """The arguments that choose the run's checkpoint (``checkpoints.inference_checkpoint``)."""
    return dict(
        train_dir=task.checkpoint_dir(config),
        best=task.best_dir(config),
        given=ckpt,
        to_validate=task.to_validate,
        to_train=task.to_train,
        newest=newest,
    )


def checkpoint_to_restore(
    task: Task, config: Config, ckpt: Optional[str] = None, *, newest: bool = False
) -> str:
    """The checkpoint ``restore`` with these arguments restores, without restoring it.

    Raises:
      acvi_tf.training.checkpoints.CheckpointError: the run holds no checkpoint.
    """
    return checkpoints.inference_checkpoint(**_choice(task, config, ckpt, newest))[0]


def restore(
    task: Task,
    config: Config,
    model: tf.Module,
    vocabularies: Any,
    ckpt: Optional[str] = None,
    *,
    newest: bool = False,
    preprocessing: bool = False,
) -> Tuple[str, Optional[int]]:
    """Restores the run's model (``checkpoints.restore_for_inference``): ``ckpt``, else
    the best model, else the newest training checkpoint; with ``newest`` the newest even
    where there is a best model (the log line then names the best model), as See's
    decode mode and tensorflow/nmt's inference restore.

    Args:
      task: the run's host.
      config: the command's settings.
      model: the built model.
      vocabularies: the host's loaded vocabulary (or vocabularies).
      ckpt: ``--ckpt``: ``best``, ``latest``, a checkpoint's path, or None.
      newest: restore the newest checkpoint rather than the best model.
      preprocessing: see ``vocabulary_check``.

    Returns:
      The checkpoint's path and its step (None: it holds none).

    Raises:
      acvi_tf.training.checkpoints.CheckpointError: the run holds no checkpoint.
      acvi_tf.training.checkpoints.CheckpointMismatchError: a checkpoint of another model.
    """
    check = vocabulary_check(task, config, vocabularies, preprocessing=preprocessing)
    return checkpoints.restore_for_inference(
        model, check=check, **_choice(task, config, ckpt, newest)
    )

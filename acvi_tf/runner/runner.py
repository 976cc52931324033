"""The Runner: what a training command does for any host (``acvi_tf.runner.task.Task``).

It reads the run's record for a command on a trained run or a resume (the model's flags
need not be repeated), sets up the runtime (seed, determinism, precision, distribution
strategy), and runs the Task's job: a training run inside its record (written before it
trains, put back when the run is refused) and in a folder a refused new run leaves as it
found it, or a command on the trained run. The commands that only name a trained run
are ``serve`` (raw text in, one output a line) and ``export`` (a SavedModel); they read
the run's settings with ``recorded_config`` through the Task's ``run_settings``.
"""

import functools
import os
from typing import Any, List

import tensorflow as tf
from absl import app, flags

from acvi_tf import builders, files
from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf.config import Config
from acvi_tf.inference import commands
from acvi_tf.inference import export as export_lib
from acvi_tf.runner.task import Task
from acvi_tf.training import checkpoints, distribute


def run(task: Task, config: Config) -> Any:
    """Runs ``task``'s command on the frozen flags ``config``.

    Args:
      task: the host.
      config: the command's ``acvi_tf.config.Config``, parsed with ``task.define_flags``.

    Returns:
      The job's result (``task.train``'s or ``task.infer``'s).

    Raises:
      acvi_tf.errors.UserError, absl.app.UsageError: a user's error, named with its fix.
    """
    config = task.prepare(config)
    trains = task.trains(config)
    checkpoint_dir = task.checkpoint_dir(config)
    resuming = trains and checkpoints.latest_checkpoint(checkpoint_dir) is not None
    if not trains or resuming:
        config = acvi_flags.run_config(
            config,
            task.run_dir(config),
            task.model_flags,
            task.command_flags,
            task.define_flags,
            entry_point=task.entry_point,
        )
    task.check(config)
    strategy = builders.configure_runtime(config, trains=trains)
    if not trains:
        return task.infer(config, strategy)
    run_dir = task.run_dir(config)
    with acvi_flags.refused_run_undone(run_dir, checkpoint_dir):
        inputs = task.training_inputs(config, resuming)
        os.makedirs(checkpoint_dir, exist_ok=True)
        with acvi_flags.training_record(
            run_dir,
            config,
            task.model_flags if resuming else None,
            distribute.is_chief(strategy),
            inputs.vocabularies,
            inputs.data_files,
            task.command_flags,
            checkpoint_dir=checkpoint_dir,
            entry_point=task.entry_point,
        ):
            return task.train(config, strategy, inputs)


def recorded_config(task: Task, run_dir: str, **given: Any) -> Config:
    """A trained run's settings for a command that only names the run (raw-text
    inference, export): ``acvi_flags.run_config`` of the training command's flags, with the values
    of ``given`` that are not None as the given flags.

    Args:
      task: the run's host (its flags, and the entry point that trained the run).
      run_dir: the run's folder, the one holding ``hparams.json``.
      **given: settings the command was given (the run's folder flags, the search
        settings); None: not given.

    Returns:
      The ``acvi_tf.config.Config``.

    Raises:
      absl.app.UsageError: the run has no ``hparams.json``.
    """
    path = os.path.join(run_dir, acvi_flags.RECORD)
    if not os.path.exists(path):
        raise app.UsageError(
            "%s is missing: %s must name a run trained with %s"
            % (path, task.names_the_run, task.entry_point)
        )
    defaults = config_lib.parse(task.define_flags, [task.entry_point])
    given = {k: v for k, v in given.items() if v is not None}
    config = config_lib.Config(defaults.replace(**given), given=given, recorded=defaults.recorded)
    return acvi_flags.run_config(
        config,
        run_dir,
        task.model_flags,
        task.command_flags,
        task.define_flags,
        entry_point=task.entry_point,
    )


def define_serve_flags(task: Task, fv: flags.FlagValues) -> None:
    """Defines the raw-text command's flags on ``fv``: the Task's run flags, ``--input``
    and ``--output``."""
    task.define_run_flags(fv)
    commands.define_io_flags(fv, task.inputs, task.outputs)


def serve(task: Task, config: Config) -> List[str]:
    """The raw-text command of ``task``: converts the lines of ``--input`` with the
    trained run the command names and writes one output a line to ``--output``.

    The output is checked before the model is restored: it may not be the input, a file
    of the run or a file an input line names.

    Args:
      task: the run's host.
      config: the command's flags (``define_serve_flags``).

    Returns:
      The outputs, one for each input line.

    Raises:
      acvi_tf.errors.UserError, absl.app.UsageError: a user's error, named with its fix.
    """
    settings = task.run_settings(config)
    builders.configure_runtime(settings)
    return commands.map_lines(
        config.input,
        config.output,
        lambda lines: task.raw_text(settings)(lines),
        task.outputs.lower(),
        files.run_files(task.run_dir(settings), *task.files_read(settings)),
        task.named_files,
    )


def define_export_flags(task: Task, fv: flags.FlagValues) -> None:
    """Defines the export command's flags on ``fv``: the Task's run flags,
    ``--export_dir``, ``--overwrite`` and, for a model that reads text,
    ``--pretokenized``."""
    task.define_run_flags(fv)
    export_lib.define_flags(fv, text_input=task.reads_text)


def export(task: Task, config: Config) -> tf.Module:
    """The export command of ``task``: saves the trained run the command names as a
    SavedModel in ``--export_dir`` (``acvi_tf.inference.export.export_run``).

    Args:
      task: the run's host.
      config: the command's flags (``define_export_flags``).

    Returns:
      The module saved.

    Raises:
      acvi_tf.errors.UserError, absl.app.UsageError: a user's error, named with its fix.
    """
    pretokenized = task.reads_text and config.pretokenized
    return export_lib.export_run(
        config,
        lambda: task.run_settings(config),
        lambda settings: task.served_module(settings, pretokenized),
        task.served,
    )


def main(task: Task) -> None:
    """A training entry point's ``__main__``: parses the command line with ``task``'s
    flags and runs (``config.run_command``)."""
    config_lib.run_command(task.define_flags, functools.partial(run, task))

"""The generic command: any Task's training command, raw-text command or export, the
Task picked by name on the command line (``python -m acvi_tf.runner``).

``--task`` names a Task of ``acvi_tf.runner.catalog`` (``summarization``, ``translation``,
``captioning``, or one registered at run time) or gives one's place as
``package.module:ATTRIBUTE``; ``--command`` picks what to run:

- ``run``: the Task's training command (``runner.run``): it trains, or evaluates, decodes
  or infers as the Task's flags say, as ``pointer_generator.run_summarization``,
  ``nmt.run_nmt`` and ``video_caption.run_captioning`` do for the three hosts;
- ``serve``: raw text in, one output a line (``runner.serve``), as ``summarize``,
  ``translate`` and ``caption`` do;
- ``export``: a SavedModel of a trained run (``runner.export``), as the hosts' ``export``
  modules do.

The rest of the command line is that command's flags, with the same names as the host's
own command, and a run that one starts the other continues.

Usage::

  python -m acvi_tf.runner --task=translation --command=run --src=en --tgt=de ...
  python -m acvi_tf.runner --task=translation --command=serve --out_dir=models/en_de \\
      --input=new.en --output=new.de
  python -m acvi_tf.runner --task=my_package.tasks:TASK --command=export --help
"""

import dataclasses
import functools
import sys
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from absl import app, flags

from acvi_tf import config as config_lib
from acvi_tf import errors
from acvi_tf.config import Config
from acvi_tf.runner import catalog, runner
from acvi_tf.runner.task import Task


@dataclasses.dataclass(frozen=True)
class Command:
    """One of the generic command's commands.

    Attributes:
      define_flags: defines a Task's flags of the command, ``(task, flag_values)``.
      job: runs it, ``(task, config) -> result``.
      what: what it does, for ``--command``'s help.
    """

    define_flags: Callable[[Task, flags.FlagValues], None]
    job: Callable[[Task, Config], Any]
    what: str


COMMANDS: Dict[str, Command] = {
    "run": Command(
        lambda task, fv: task.define_flags(fv),
        runner.run,
        "the training command, which also evaluates, decodes or infers",
    ),
    "serve": Command(runner.define_serve_flags, runner.serve, "raw text in, one output a line"),
    "export": Command(runner.define_export_flags, runner.export, "a SavedModel of a trained run"),
}


def _given(argv: Sequence[str], name: str) -> Optional[str]:
    """The value of ``--name`` (``--name=value`` or ``--name value``, one dash or two; the
    last one given, as absl takes it) on a command line whose flags are not defined yet."""
    words, value = list(argv[1:]), None
    for i, word in enumerate(words):
        if word == "--":
            break
        for dashes in ("--", "-"):
            if word.startswith(dashes + name + "="):
                value = word[len(dashes + name) + 1 :]
            elif word == dashes + name and i + 1 < len(words):
                value = words[i + 1]
    return value


def picked(argv: Sequence[str]) -> Tuple[Task, str]:
    """The Task and the command a command line names, read before their flags exist.

    Args:
      argv: the command line, program name first.

    Raises:
      absl.app.UsageError: ``--task`` or ``--command`` is missing or names nothing.
    """
    name, command = _given(argv, "task"), _given(argv, "command")
    usage = (
        "give --task=<%s or package.module:ATTRIBUTE> and --command=<%s>; with both, "
        "--helpshort lists the command's flags"
        % (", ".join(catalog.names()), errors.listed(list(COMMANDS)).replace(" and ", " or "))
    )
    if not name or not command:
        raise app.UsageError(usage)
    if command not in COMMANDS:
        raise app.UsageError("--command=%s: %s" % (command, usage))
    return catalog.task(name), command


def define_flags(task: Task, command: str, fv: flags.FlagValues) -> None:
    """Defines ``--task``, ``--command`` and the flags of ``task``'s ``command`` on ``fv``."""
    flags.DEFINE_string(
        "task",
        None,
        "The Task: %s, or package.module:ATTRIBUTE." % ", ".join(catalog.names()),
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "command",
        None,
        list(COMMANDS),
        "; ".join("%s: %s" % (name, c.what) for name, c in COMMANDS.items()) + ".",
        flag_values=fv,
    )
    COMMANDS[command].define_flags(task, fv)


def parse(argv: Sequence[str]) -> Tuple[Task, str, Config]:
    """Parses a command line of the generic command in process.

    Args:
      argv: the command line, program name first.

    Returns:
      ``(task, command, config)``; the config records the Task's training flags as its
      own training command's does.

    Raises:
      absl.app.UsageError: ``--task`` or ``--command`` is missing or names nothing.
      absl.flags.Error: a flag is unknown or its value is refused.
    """
    task, command = picked(argv)
    config = config_lib.parse(
        functools.partial(define_flags, task, command),
        argv,
        recorded_module=task.define_flags.__module__,
    )
    return task, command, config


def run(task: Task, command: str, config: Config) -> Any:
    """Runs ``task``'s ``command`` on the parsed flags; returns its job's result."""
    return COMMANDS[command].job(task, config)


def main() -> None:
    """The process's entry: picks the Task and the command from ``sys.argv``, parses
    their flags and runs (``config.run_command``); a command line that picks nothing is
    refused in one line with status 2."""
    try:
        task, command = picked(sys.argv)
    except app.UsageError as e:
        errors.report(e)
    config_lib.run_command(
        functools.partial(define_flags, task, command),
        functools.partial(run, task, command),
        recorded_module=task.define_flags.__module__,
    )

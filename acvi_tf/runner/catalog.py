"""The Tasks the generic command (``acvi_tf.runner.command``) knows by name.

The three hosts are named here as ``module:attribute`` and imported only when a command
picks one, so the library imports no host. A Task of one's own is given to the command as
``--task=package.module:TASK``, or registered by name at run time (``register``).
"""

import importlib
from typing import Dict, List, Union

from absl import app

from acvi_tf.runner.task import Task

# name -> the Task, or where it is (``module:attribute``) until a command picks it
TASKS: Dict[str, Union[str, Task]] = {
    "summarization": "pointer_generator.task:TASK",
    "translation": "nmt.task:TASK",
    "captioning": "video_caption.task:TASK",
}


def register(name: str, task: Task) -> None:
    """Makes ``task`` the Task the generic command picks by ``name``.

    Raises:
      ValueError: another Task has the name.
    """
    known = TASKS.get(name)
    if known is not None and known is not task:
        raise ValueError("a Task named %r is registered already" % name)
    TASKS[name] = task


def names() -> List[str]:
    """The registered names, sorted."""
    return sorted(TASKS)


def task(name: str) -> Task:
    """The Task registered as ``name``, or the one ``module:attribute`` names.

    Raises:
      absl.app.UsageError: neither names a Task.
    """
    where = TASKS.get(name, name)
    if isinstance(where, Task):
        return where
    module, _, attribute = where.partition(":")
    refusal = "--task=%s names no Task: give one of %s, or package.module:ATTRIBUTE" % (
        name,
        ", ".join(names()),
    )
    if not module or not attribute:
        raise app.UsageError(refusal)
    try:
        found = getattr(importlib.import_module(module), attribute, None)
    except ImportError as e:
        raise app.UsageError("%s (%s)" % (refusal, e)) from e
    if not isinstance(found, Task):
        raise app.UsageError(refusal)
    return found

"""Clean stops on SIGINT (Ctrl-C) and SIGTERM (what a cluster scheduler or ``docker
stop`` sends): one line on stderr, no traceback, and the status a shell gives a process
ended by the signal, 128 plus its number (130, 143).

Two ways to stop, each a context manager that handles both signals in its block (in the
main thread, where Python runs signal handlers) and puts the previous handlers back:

- ``AtOnce`` (every command, ``errors.run``): the command stops where it is, by
  ``Stopped``, a ``SystemExit`` raised in the main thread: ``finally`` blocks run, an
  atomic write in progress removes its temporary file (``files.atomic_write``), so what
  is written stays whole, and a single-pass decode resumes from its finished articles.
- ``Deferred`` (a trainer, ``acvi_tf.training.trainer.Trainer``): the signal is recorded
  (``signum``) and the trainer acts on it between steps: it saves the step and raises
  ``Stopped``.

Python ignores an exception raised where it cannot propagate (it prints "Exception
ignored in" and goes on): a signal that lands in a fork hook, as each subprocess starts,
would be lost. ``AtOnce`` keeps its signal, so ``check()`` raises the stop again; the
loops over long inputs call it per item (``acvi_tf.progress.Progress`` and the feature
extractor) and ``errors.run`` when the command returns. ``AtCheck`` (the feature
extractor, which starts a video reader per clip) only records the signal, and its
loop's ``check()`` stops after the item it is on.

A command (``config.run_command``) ends its process once a stop has unwound, without the
interpreter's teardown, which saves nothing and takes seconds (``exit_now``). In both
ways, a second signal ends the process at once, even in the middle of a checkpoint save:
TensorFlow writes a checkpoint's files before the ``checkpoint`` index names them, so the
newest readable checkpoint stays whole (``acvi_tf.training.checkpoints``).

``SystemDefault`` gives both signals their system default instead: the process ends at
once, with no line (a multi-worker trainer).
"""

import os
import signal
import sys
import threading
from typing import Any, List, Optional

from absl import logging

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def status(signum: int) -> int:
    """The exit status of a stop by signal ``signum``: 128 plus its number."""
    return 128 + signum


def name(signum: int) -> str:
    """The signal's name, ``SIGTERM``."""
    return signal.Signals(signum).name


class Stopped(SystemExit):
    """The command stops on signal ``signum``, with exit status ``status(signum)``.

    ``kept`` holds what the stop must not tear down while it unwinds (a trainer's
    ``tf.data`` iterator, whose teardown can wait seconds on its threads); a command
    ends the process without it (``exit_now``).
    """

    def __init__(self, signum: int):
        super().__init__(status(signum))
        self.signum = signum
        self.kept: List[Any] = []


def exit_now(signum: int) -> None:
    """Ends the process with ``status(signum)``, running nothing more: the log and the
    standard streams are flushed, and nothing is torn down."""
    logging.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status(signum))


class _Handling:
    """Handles SIGINT and SIGTERM by ``first`` within a ``with`` block; a later signal
    ends the process at once. Outside the main thread it handles nothing.

    Args:
      hint: what the lines of a stop add, e.g. ``"; rerun the same command to resume"``.
    """

    def __init__(self, hint: str = ""):
        self.hint = hint
        self.signum: Optional[int] = None
        self._previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handler()) for s in SIGNALS}
        return self

    def _handler(self):
        """What handles the signals in the block."""
        return self._handle

    def __exit__(self, *exc_info) -> None:
        for signum, handler in self._previous.items():  # None: a handler set outside Python
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        self._previous = {}

    def _handle(self, signum: int, frame) -> None:
        del frame
        if self.signum is not None:
            logging.warning("Stopped at once by a second %s%s", name(signum), self.hint)
            exit_now(signum)
        self.signum = signum
        self.first(signum)

    def first(self, signum: int) -> None:
        """What the first signal does (``Deferred``: nothing more than recording it)."""


class AtOnce(_Handling):
    """Stops the command where it is, with one line: ``Stopped by SIGTERM`` and the hint."""

    def __enter__(self):
        _STOPPING.append(self)
        return super().__enter__()

    def __exit__(self, *exc_info) -> None:
        _STOPPING.remove(self)
        super().__exit__(*exc_info)

    _said = False

    def first(self, signum: int) -> None:
        self.stop()

    def stop(self) -> None:
        """Raises ``Stopped`` for the block's signal, saying so once."""
        if not self._said:
            logging.warning("Stopped by %s%s", name(self.signum), self.hint)
            self._said = True
        raise Stopped(self.signum)


class AtCheck(AtOnce):
    """``AtOnce`` that stops at the next ``check()`` instead of where the signal lands: for
    a loop that starts a subprocess per item, where a stop raised in a fork hook would be
    printed as an ignored exception, and whose items are short."""

    def first(self, signum: int) -> None:
        """Nothing: the signal is recorded, and ``check()`` stops."""

    def __exit__(self, *exc_info) -> None:
        super().__exit__(*exc_info)
        if exc_info[0] is None and self.signum is not None:  # after the loop's last check
            self.stop()


# The ``AtOnce`` and ``AtCheck`` blocks the process is in, innermost last.
_STOPPING = []


def check() -> None:
    """Raises ``Stopped`` for a signal an ``AtCheck`` block has recorded, or an ``AtOnce``
    block has handled whose exception was lost (raised where Python ignores exceptions);
    nothing otherwise."""
    for handling in _STOPPING:
        if handling.signum is not None:
            handling.stop()


class Deferred(_Handling):
    """Records the first signal in ``signum`` for the block's owner to act on."""


class SystemDefault(_Handling):
    """The system's default action in the block: the process ends at once, even inside a
    TensorFlow op that waits for other processes (a multi-worker strategy's collective
    operations), where a Python handler would wait for the op to return."""

    def _handler(self):
        return signal.SIG_DFL

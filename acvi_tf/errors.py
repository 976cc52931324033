"""The errors a user can fix, and how every command reports them.

An exception class that also derives from ``UserError`` is bad input, bad flags or a
missing tool: its message already names the file, the record and the fix. ``run``
(every command's ``app.run``) reports it as one line on stderr, ``error: <message>``,
with exit status 2; so are an ``OSError`` about a named file (a missing vocabulary, a full
disk) and an ``app.UsageError`` (without the module's help text that ``app.run`` would
print before it). Anything else is a bug and keeps its traceback, as does everything under
``--debug`` where a command defines it.
"""

import sys
from typing import Callable, List, NoReturn

from absl import app, flags


class UserError(Exception):
    """Marks an exception class whose message tells the user what to fix."""


def report(error: BaseException) -> NoReturn:
    """Writes ``error: <message>`` on stderr and exits with status 2."""
    if isinstance(error, OSError) and error.filename:
        message = "%s: %s" % (error.filename, error.strerror or error)
    else:
        message = str(error)
    sys.stderr.write("error: %s\n" % " ".join(message.split("\n")))
    sys.exit(2)


def _debugging() -> bool:
    return "debug" in flags.FLAGS and bool(flags.FLAGS["debug"].value)


def run(main: Callable[[List[str]], None]) -> None:
    """``absl.app.run(main)``, with a user's error reported by ``report``."""

    def guarded(argv):
        try:
            return main(argv)
        except (UserError, OSError, app.UsageError) as e:
            if isinstance(e, OSError) and not e.filename or _debugging():
                raise
            report(e)

    app.run(guarded)

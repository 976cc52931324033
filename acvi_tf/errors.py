"""The errors a user can fix, and how every command reports them.

An exception class that also derives from ``UserError`` is bad input, bad flags or a
missing tool: its message already names the file, the record and the fix. ``run``
(every command's ``app.run``) reports it as one line on stderr, ``error: <message>``,
with exit status 2; so are an ``OSError`` about a named file (a missing vocabulary, a
full disk), TensorFlow's ``ResourceExhaustedError`` of a write that found the disk full
(named by the folder it wrote to), an ``app.UsageError`` (without the module's help text
that ``app.run`` would print before it) and a command line that absl refuses (a flag's
typo, a value of the wrong type, a required flag left out), which absl alone reports in
two lines or more with exit status 1. Anything else is a bug and keeps its traceback, as
does everything under ``--debug`` where a command defines it. SIGINT and SIGTERM stop a
command with one line too (``acvi_tf.process.stops``).
"""

import errno
import os
import re
import sys
from typing import Callable, List, NoReturn, Optional

from absl import app, flags

from acvi_tf.process import stops

# The errors of a write that found no room: a full disk, a full quota.
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
# The errors of a write to a folder the user may not write: permissions, a read-only disk.
NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)
# TensorFlow's message when a write (a checkpoint's SaveV2) finds the disk full.
_TF_NO_SPACE = re.compile(r"(\S+); No space left on device")


class UserError(Exception):
    """Marks an exception class whose message tells the user what to fix."""


def report(error: BaseException) -> NoReturn:
    """Writes ``error: <message>`` on stderr and exits with status 2."""
    if isinstance(error, OSError) and error.filename:
        message = "%s: %s" % (error.filename, error.strerror or error)
        if error.errno in NO_SPACE:
            message += "; free space there, or write to a folder on another disk"
        elif error.errno in NOT_WRITABLE:
            message += "; make its folder writable, or write to another folder"
        elif error.errno == errno.ENOENT:
            message += "; check the path given for it, or run the command that writes it first"
    else:
        message = str(error)
    sys.stderr.write("error: %s\n" % " ".join(message.split("\n")))
    sys.exit(2)


# absl's message for a required flag left out (``flags.mark_flag_as_required``)
_REQUIRED = re.compile(r"flag --(\w+)=None: Flag --\1 must have a value other than None\.")
# absl's message for a group of flags of which one must be given
# (``flags.mark_flags_as_mutual_exclusive(..., required=True)``)
_ONE_OF = re.compile(r"flags .*: Exactly one of \((.*)\) must have a value other than None\.")


def listed(names: List[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``: names in a sentence."""
    return names[0] if len(names) == 1 else "%s and %s" % (", ".join(names[:-1]), names[-1])


def flag_error_message(error: flags.Error) -> str:
    """absl's refusal of a command line as one sentence per problem: the required flags
    left out named together, then each other problem in absl's words, then where the
    flags are listed."""
    problems = [line.strip() for line in str(error).splitlines() if line.strip()]
    required = ["--" + m.group(1) for m in map(_REQUIRED.fullmatch, problems) if m]
    others = []
    for problem in problems:
        one_of = _ONE_OF.fullmatch(problem)
        if one_of:
            names = ["--" + name for name in one_of.group(1).split(", ")]
            others.append("give exactly one of %s" % listed(names).replace(" and ", " or "))
        elif not _REQUIRED.fullmatch(problem):
            others.append(problem)
    if required:
        verb = "are" if len(required) > 1 else "is"
        others.insert(0, "%s %s required" % (listed(required), verb))
    return "%s (--helpshort lists the flags)" % "; ".join(others)


def _parse_flags(argv: List[str]) -> List[str]:
    """absl's parsing of ``argv`` into ``flags.FLAGS``, with a refusal reported by
    ``report``."""
    try:
        return flags.FLAGS(argv)
    except flags.Error as e:
        report(flags.Error(flag_error_message(e)))


def disk_full(error: BaseException) -> Optional[OSError]:
    """TensorFlow's error of a write that found the disk full, as the ``OSError`` of the
    folder it wrote to; None for any other error (a GPU out of memory keeps its
    traceback).

    Args:
      error: an exception.

    Returns:
      ``OSError(ENOSPC, ..., folder)`` or None.
    """
    tf = sys.modules.get("tensorflow")
    if tf is None or not isinstance(error, tf.errors.ResourceExhaustedError):
        return None
    written = _TF_NO_SPACE.search(str(error))
    if not written:
        return None
    folder = os.path.dirname(written.group(1))
    if folder.endswith("_temp"):  # a checkpoint is written to <prefix>_temp/ first
        folder = os.path.dirname(folder)
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), folder)


def _debugging() -> bool:
    return "debug" in flags.FLAGS and bool(flags.FLAGS["debug"].value)


def run(main: Callable[[List[str]], None]) -> None:
    """``absl.app.run(main)``, with a user's error reported by ``report`` and a stop by
    SIGINT or SIGTERM in one line (``stops.AtOnce``)."""

    def guarded(argv):
        try:
            result = main(argv)
            stops.check()  # a stop that was raised where Python ignored it
            return result
        except (UserError, OSError, app.UsageError) as e:
            if isinstance(e, OSError) and not e.filename or _debugging():
                raise
            report(e)
        except Exception as e:
            full = disk_full(e)
            if full is None or _debugging():
                raise
            report(full)

    with stops.AtOnce():
        app.run(guarded, flags_parser=_parse_flags)

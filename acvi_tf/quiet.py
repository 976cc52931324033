"""TensorFlow's start-up lines, kept off a command's output unless it asks for them.

Every package of the project imports this module first (its ``__init__``), before
anything imports TensorFlow; ``install`` then runs once per process. Unless the command
line asks for more (``--verbosity``/``-v`` >= 1, or ``--debug``) or the user set
``TF_CPP_MIN_LOG_LEVEL``:

- ``TF_CPP_MIN_LOG_LEVEL=3``: TensorFlow's C++ log keeps its fatal lines only (no
  ``failed call to cuInit`` on a machine without a GPU, no oneDNN notes);
- ``import tensorflow`` and ``import tensorflow_text`` run with file descriptor 2 sent to
  a temporary file, since TensorFlow writes lines there before its log reads
  ``TF_CPP_MIN_LOG_LEVEL``; afterwards every captured line that is not start-up noise
  (``is_noise``), a Python warning or traceback say, goes to stderr;
- TensorFlow's, Keras's and rouge-score's Python log lines below WARNING are dropped,
  from TensorFlow's logger and from absl's (``functional_saver``'s ``Sharding callback
  duration`` at each save).

``TF_CPP_MIN_LOG_LEVEL`` stays set for the process's children, with ``ACVI_TF_QUIET``
marking it as this module's, so that a child command decides for itself too.
"""

import contextlib
import faulthandler
import importlib.abc
import importlib.machinery
import logging
import os
import re
import sys
import tempfile
import types
import warnings
from typing import Callable, Iterator, Optional, Sequence

from absl import logging as absl_logging

LEVEL = "TF_CPP_MIN_LOG_LEVEL"
# set to LEVEL's value when this module set LEVEL, so a child process tells it apart
MARK = "ACVI_TF_QUIET"
QUIET_LEVEL = "3"
# the modules whose import prints start-up lines
QUIETED = ("tensorflow", "tensorflow_text")
# the packages whose INFO lines are dropped (rouge-score's "Using default tokenizer.")
LIBRARIES = ("tensorflow", "tf_keras", "keras", "rouge_score")

# What TensorFlow prints while it loads: the notice of absl's uninitialised log, the C++
# info and warning lines in the log's two formats (2.21's "I0000 00:00:... port.cc:153]"
# before the log is set up, 2.15's "2026-01-01 10:00:00.000000: I ...port.cc:113]"), the
# second line of the CPU feature note, the CUDA plugins' duplicate registrations, and the
# CUDA probe's error on a machine without a GPU.
_NOISE = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\) is called"
    r"|^[IW]\d{4} [\d:.]+ +\d+ \S+\.(cc|h):\d+\] "
    r"|^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] \S+\.(cc|h):\d+\] "
    r"|^To enable the following instructions: "
    r"|Unable to register cu(DNN|FFT|BLAS) factory"
    r"|computation placer already registered"
    r"|failed call to cuInit"
)
# tensorflow-hub's note on the tf215 lane, printed when tensorflow_text imports it
_IMPORT_WARNINGS = r"pkg_resources is deprecated"


def is_noise(line: str) -> bool:
    """Whether ``line``, printed while TensorFlow loads, is start-up noise."""
    return bool(_NOISE.search(line))


def _flag_value(argv: Sequence[str], names: Sequence[str]) -> Optional[str]:
    """The last value ``argv`` gives a flag of one of ``names`` (absl's forms: ``-``
    or ``--``, ``=value`` or the next argument; a boolean's bare name is ``"true"``,
    ``--noname`` ``"false"``), or None."""
    value = None
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if not arg.startswith("-"):
            continue
        name, equals, given = arg.lstrip("-").partition("=")
        if name in names:
            if equals:
                value = given
            elif name == "debug":
                value = "true"
            elif i + 1 < len(args):
                value = args[i + 1]
        elif name.startswith("no") and name[2:] in names and not equals:
            value = "false"
    return value


def verbose_requested(argv: Sequence[str]) -> bool:
    """Whether the command line asks for TensorFlow's lines: ``--verbosity`` (or ``-v``)
    of 1 or more, or ``--debug``."""
    verbosity = _flag_value(argv, ("verbosity", "v"))
    debug = _flag_value(argv, ("debug",))
    try:
        verbose = verbosity is not None and int(verbosity) >= 1
    except ValueError:  # absl refuses the value when it parses the flags
        verbose = False
    return verbose or (debug or "false").lower() in ("true", "t", "1", "yes", "y")


@contextlib.contextmanager
def stderr_filtered(noise: Callable[[str], bool] = is_noise) -> Iterator[None]:
    """Sends file descriptor 2 to a temporary file inside the block; afterwards writes
    the lines that are not ``noise`` to stderr.

    A crash inside the block (a fatal signal) still reaches the terminal: the fault
    handler writes the Python traceback to the real stderr.

    Args:
      noise: ``line -> bool``, whether a line written inside the block is dropped.
    """
    try:
        saved = os.dup(2)
    except OSError:  # no file descriptor 2 to redirect
        yield
        return
    sys.stderr.flush()
    handled = faulthandler.is_enabled()
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        if not handled:
            faulthandler.enable(file=saved)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            if not handled:
                faulthandler.disable()
            os.close(saved)
            capture.seek(0)
            text = capture.read().decode("utf-8", "replace")
            sys.stderr.write("".join(line for line in text.splitlines(True) if not noise(line)))
            sys.stderr.flush()


class LibraryInfoFilter(logging.Filter):
    """Drops the records below WARNING that a module of ``LIBRARIES`` logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        for name in LIBRARIES:
            path = getattr(sys.modules.get(name), "__file__", None)
            if path and record.pathname.startswith(os.path.dirname(path) + os.sep):
                return False
        return True


class _QuietLoader(importlib.abc.Loader):
    """Runs another loader's ``exec_module`` inside ``stderr_filtered``; the module keeps
    the original loader."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = module.__spec__.loader = self._loader
        with stderr_filtered(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", _IMPORT_WARNINGS)
            self._loader.exec_module(module)


class QuietFinder(importlib.abc.MetaPathFinder):
    """Finds ``QUIETED`` modules with the finders after it, and wraps their loaders."""

    def find_spec(
        self,
        fullname: str,
        path: Optional[Sequence[str]],
        target: Optional[types.ModuleType] = None,
    ) -> Optional[importlib.machinery.ModuleSpec]:
        """The spec of a ``QUIETED`` module, its loader wrapped; None for any other."""
        if fullname not in QUIETED:
            return None
        for finder in sys.meta_path[sys.meta_path.index(self) + 1 :]:
            spec = getattr(finder, "find_spec", lambda *_: None)(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _QuietLoader(spec.loader)
                return spec
        return None


def install(argv: Sequence[str] = None, environ=None) -> bool:
    """Quiets TensorFlow's start-up for this process, unless ``argv`` asks for its lines
    or ``environ`` sets ``TF_CPP_MIN_LOG_LEVEL`` (other than by this module).

    Args:
      argv: the command line; ``sys.argv`` by default.
      environ: the environment to read and set; ``os.environ`` by default.

    Returns:
      Whether TensorFlow's lines are quieted.
    """
    argv = sys.argv[1:] if argv is None else argv
    environ = os.environ if environ is None else environ
    ours = LEVEL in environ and environ.get(MARK) == environ[LEVEL]
    if verbose_requested(argv):
        if ours:  # a parent's quiet setting: TensorFlow's default instead
            del environ[LEVEL], environ[MARK]
        return False
    logging.getLogger("tensorflow").setLevel(logging.WARNING)
    absl_logger = absl_logging.get_absl_logger()
    if not any(isinstance(f, LibraryInfoFilter) for f in absl_logger.filters):
        absl_logger.addFilter(LibraryInfoFilter())
    if LEVEL in environ and not ours:
        return False
    environ[LEVEL] = environ[MARK] = QUIET_LEVEL
    if not any(isinstance(finder, QuietFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, QuietFinder())
    return True


install()

"""A command's settings, frozen once its flags are parsed.

Every entry point defines its flags on a ``FlagValues`` (``define_flags``), parses the
command line, and runs on ``from_flags(flag_values, __name__)`` (``run_command`` does the
three for its ``__main__``; ``parse`` for a program or a test): an immutable record of
every flag's value, which flags the command line gave, and which belong in the run's
record (``hparams.json``). Nothing downstream reads or changes absl's state; a setting
derived from others (tensorflow/nmt's presets) is a new ``Config`` from ``replace``.
"""

import os
import sys
from collections.abc import Mapping
from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence

from absl import app, flags

from acvi_tf import errors
from acvi_tf.process import stops

# the module that defines the flags every entry point shares (acvi_tf.flags), and the
# package whose context mechanisms define their own beside them (acvi_tf.contexts.acvi's
# --acvi_* flags)
SHARED_FLAGS_MODULE = "acvi_tf.flags"
MECHANISMS_PACKAGE = "acvi_tf.contexts."


def _frozen(value: Any) -> Any:
    """A list flag's value as a tuple; every other value as it is."""
    return tuple(value) if isinstance(value, list) else value


class Config(Mapping):
    """The parsed flags of one command, read-only.

    Values read as attributes (``config.batch_size``) or items (``config["lr"]``); list
    flags are tuples.

    Attributes:
      given: names of the flags the command line set.
      recorded: names of the flags the run's record keeps: the entry point's own and the
        shared ones, not absl's or a library's.
    """

    __slots__ = ("_values", "given", "recorded")

    def __init__(
        self,
        values: Mapping,
        given: Iterable[str] = (),
        recorded: Iterable[str] = None,
    ):
        object.__setattr__(self, "_values", {k: _frozen(v) for k, v in values.items()})
        object.__setattr__(self, "given", frozenset(given))
        object.__setattr__(
            self, "recorded", frozenset(self._values if recorded is None else recorded)
        )

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError("no flag --%s in this command" % name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Config is read-only: use replace(%s=...)" % name)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return "Config(%s)" % ", ".join("%s=%r" % item for item in sorted(self._values.items()))

    def replace(self, **changes: Any) -> "Config":
        """A copy with ``changes`` applied; each name must be a flag of the command."""
        unknown = sorted(set(changes) - set(self._values))
        if unknown:
            raise AttributeError(
                "no flag %s in this command" % ", ".join("--" + n for n in unknown)
            )
        return Config(dict(self._values, **changes), self.given, self.recorded)

    def record(self) -> dict:
        """The recorded flags' values, by name (tuples as lists, as JSON keeps them)."""
        return {
            n: list(v) if isinstance(v, tuple) else v
            for n, v in sorted(self._values.items())
            if n in self.recorded
        }


def from_flags(flag_values: flags.FlagValues, module: str) -> Config:
    """Freezes parsed flags.

    Args:
      flag_values: a parsed ``absl.flags.FlagValues``.
      module: the entry point's ``__name__`` (also when it runs as ``__main__``): its
        flags and the shared ones are the recorded ones.

    Returns:
      The ``Config``.
    """
    by_module = flag_values.flags_by_module_dict()
    recorded = {
        f.name
        for defining, defined in by_module.items()
        if defining in (module, sys.argv[0], SHARED_FLAGS_MODULE)
        or defining.startswith(MECHANISMS_PACKAGE)
        for f in defined
    }
    # a flag with a short name is listed under both names
    names = [n for n in flag_values if flag_values[n].name == n]
    return Config(
        {n: flag_values[n].value for n in names},
        given=[n for n in names if flag_values[n].present],
        recorded=recorded,
    )


def expand_home(argv: Sequence[str]) -> List[str]:
    """``argv`` with ``~`` expanded at the start of a ``--name=~/...`` value, as the shell
    expands it in ``--name ~/...`` but not after ``=``.

    Args:
      argv: the command line, program name first.
    """
    expanded = []
    for word in argv:
        name, equals, value = word.partition("=")
        if word.startswith("--") and equals and (value == "~" or value.startswith("~/")):
            word = name + equals + os.path.expanduser(value)
        expanded.append(word)
    return expanded


def parse(
    define_flags: Callable[[flags.FlagValues], None],
    argv: Sequence[str],
    recorded_module: Optional[str] = None,
) -> Config:
    """Parses a command line the way an entry point does, on flags of its own.

    For programs and tests that call an entry point's ``run(config)`` in process.

    Args:
      define_flags: the entry point's ``define_flags(flag_values)``.
      argv: the command line, program name first.
      recorded_module: the module whose flags a run's record keeps (``from_flags``);
        None: ``define_flags``'s.

    Returns:
      The ``Config``.

    Raises:
      absl.flags.Error: a flag is unknown or its value is refused.
    """
    flag_values = flags.FlagValues()
    define_flags(flag_values)
    flag_values(expand_home(argv))
    return from_flags(flag_values, recorded_module or define_flags.__module__)


def define_command_flags(
    define_flags: Callable[[flags.FlagValues], None],
    flag_values: flags.FlagValues,
    main_module: str,
) -> None:
    """Defines a command's flags and makes each a key flag of ``main_module``, so that
    ``--helpshort`` lists them all: the entry point's own, those a helper module defines
    for it (an export's run flags) and the shared ones.

    Args:
      define_flags: the entry point's ``define_flags(flag_values)``.
      flag_values: where the flags go.
      main_module: the module ``--helpshort`` describes (absl's: ``sys.argv[0]``).
    """
    before = set(flag_values)
    define_flags(flag_values)
    for name in sorted(set(flag_values) - before):
        flag_values.register_key_flag_for_module(main_module, flag_values[name])


def run_command(
    define_flags: Callable[[flags.FlagValues], None],
    run: Callable[[Config], Any],
    exit_status: Callable[[Any], int] = None,
    recorded_module: Optional[str] = None,
) -> None:
    """An entry point's ``__main__``: defines its flags, parses the command line, runs.

    ``run(config)`` gets the frozen flags; a user's error is reported in one line with
    exit status 2 (``acvi_tf.errors.run``); a stop by SIGINT or SIGTERM ends the process
    once it has unwound, without the interpreter's teardown (``stops.exit_now``).

    Args:
      define_flags: the entry point's ``define_flags(flag_values)``.
      run: the entry point's ``run(config)``.
      exit_status: maps ``run``'s result to the exit status; None: 0.
      recorded_module: the module whose flags a run's record keeps (``from_flags``);
        None: ``define_flags``'s.
    """
    define_command_flags(define_flags, flags.FLAGS, sys.argv[0])
    sys.argv = expand_home(sys.argv)

    def main(argv: List[str]) -> Any:
        if len(argv) > 1:
            raise app.UsageError("unknown command-line arguments: %s" % " ".join(argv[1:]))
        result = run(from_flags(flags.FLAGS, recorded_module or define_flags.__module__))
        return exit_status(result) if exit_status else None

    try:
        errors.run(main)
    except stops.Stopped as stopped:
        # What a stop keeps is written by now; the interpreter's teardown (TensorFlow's
        # runtime, tf.data's threads) would take seconds more and save nothing.
        stops.exit_now(stopped.signum)

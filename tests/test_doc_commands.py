"""The docs' commands are the commands that work: every command of README.md and docs/
(tests/doc_commands.py reads them) names flags its entry point has, with values it
takes, and names make targets and tools that exist; a test runs each, or
``doc_commands.NOT_RUN`` says why none does."""

import importlib
import os
import re
import shlex
import subprocess

import doc_commands
import pytest

from acvi_tf import config as config_lib
from acvi_tf.runner import command as generic_command

ROOT = doc_commands.ROOT
COMMANDS = doc_commands.all_commands()

PACKAGES = ("pointer_generator", "nmt", "video_caption", "data_prep")
GENERIC = "acvi_tf.runner"  # the generic command, whose flags are its Task's


def _replace_flags(args, extra):
    """``args`` with each flag of ``extra`` replacing the one of the same name, or added."""
    names = {flag.split("=")[0] for flag in extra}
    return [a for a in args if a.split("=")[0] not in names] + list(extra)


def _parse(module, args):
    """Parses ``args`` with ``module``'s flags (the generic command's: those of the Task
    and the command it picks); raises absl's error on a bad flag."""
    if module == GENERIC:
        return generic_command.parse([module, *args])[2]
    define_flags = importlib.import_module(module).define_flags
    return config_lib.parse(define_flags, [module, *args])


def _script_flags(path):
    """The flags a script defines (``flags.DEFINE_x("name", ...)``)."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return set(re.findall(r"DEFINE_\w+\(\s*\"(\w+)\"", f.read()))


def _make_targets():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        return set(re.findall(r"^([\w-]+):", f.read(), re.M))


def test_the_docs_hold_the_commands_of_every_host():
    modules = {c.python_module()[0] for c in COMMANDS if c.python_module()}
    assert {
        "data_prep.summarization",
        "data_prep.translation",
        "data_prep.captions",
        "pointer_generator.run_summarization",
        "pointer_generator.summarize",
        "pointer_generator.export",
        "nmt.run_nmt",
        "nmt.translate",
        "video_caption.run_captioning",
        "video_caption.caption",
    } <= modules


@pytest.mark.parametrize("command", COMMANDS, ids=[c.where for c in COMMANDS])
def test_every_command_names_what_exists(command):
    """A ``python -m`` command's flags parse with its entry point's flags (with its
    optional parts and each variant too); a script's flags are defined in it; a make
    target is the Makefile's; every other tool is installed."""
    found = command.python_module()
    words = command.words
    if found:
        module, args = found
        _parse(module, args)
        if command.optional:
            _parse(module, _replace_flags(args, command.optional))
        for label, flags in command.variants.items():
            _parse(module, _replace_flags(args, flags))
    elif words[0] == "python" and words[1].endswith(".py"):
        defined = _script_flags(words[1])
        given = {w[2:].split("=")[0] for w in words[2:] if w.startswith("--")}
        assert given <= defined, (command.where, given - defined)
    elif words[0] == "make":
        targets = [w for w in words[1:] if "=" not in w]
        assert set(targets) <= _make_targets(), command.where
    elif found is None and not doc_commands.not_run(command):
        tool = os.path.join(ROOT, ".venv", "bin", words[0])
        assert words[0] in ("python", "tensorboard") and os.path.exists(tool), command.where


def test_the_makefile_runs_commands_that_parse():
    """``make -n`` shows the demo targets' commands; each parses with its flags."""
    for target in ("demo", "demo-captions"):
        shown = subprocess.run(
            ["make", "-n", target], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        ran = 0
        for line in shown.replace("\\\n", " ").splitlines():
            match = re.search(r"python -m ((?:%s)\.\w+)\s(.*)$" % "|".join(PACKAGES), line)
            # the results table's folder is a shell substitution
            if match and match.group(1) != "pointer_generator.results_table":
                _parse(match.group(1), shlex.split(match.group(2)))
                ran += 1
        assert ran >= 4, target


def _test_exists(name):
    """Whether ``file.py::test_function`` names a test function of tests/."""
    path, function = name.split("::")
    with open(os.path.join(ROOT, "tests", path), encoding="utf-8") as f:
        return re.search(r"^def %s\(" % function, f.read(), re.M) is not None


def test_a_test_runs_every_command_or_not_run_says_why():
    """Every command is in a block that ``RUN_BY`` names the tests of, or ``NOT_RUN``
    gives the reason; every entry of both tables names a command that is there, and
    every named test exists. So a new command without a test fails here."""
    for command in COMMANDS:
        key = (command.page, command.block)
        assert key in doc_commands.RUN_BY or doc_commands.not_run(command), (
            "%s: no test runs it: run it in a test and name the test in "
            "doc_commands.RUN_BY, or say why not in doc_commands.NOT_RUN" % command.where
        )
    for (page, number), tests in doc_commands.RUN_BY.items():
        block = doc_commands.block(page, number)
        assert [c for c in block if not doc_commands.not_run(c)], (page, number)
        assert all(_test_exists(name) for name in tests), tests
    for start in doc_commands.NOT_RUN:
        assert any(c.text.startswith(start) for c in COMMANDS), start
    snippets = {
        (page, number)
        for page in doc_commands.pages()
        for number, _ in enumerate(doc_commands.snippets(page))
    }
    assert snippets == set(doc_commands.SNIPPETS_RUN_BY)
    assert all(_test_exists(name) for name in doc_commands.SNIPPETS_RUN_BY.values())

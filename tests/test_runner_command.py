"""The generic command (``python -m acvi_tf.runner``): the catalog's names pick the three
hosts' Tasks, each command has the flags of the host's own command and records what it
records, and a command line that picks nothing is one line with status 2. The fourth
host's test (``test_fourth_host.py``) runs a Task registered at run time through it."""

import functools
import importlib
import re
import sys

import pytest
from absl import app, flags

from acvi_tf import config as config_lib
from acvi_tf.runner import catalog, command

# The catalog's name of each host and its own command for each generic one.
HOSTS = {
    "summarization": dict(
        package="pointer_generator",
        run="pointer_generator.run_summarization",
        serve="pointer_generator.summarize",
        export="pointer_generator.export",
    ),
    "translation": dict(
        package="nmt", run="nmt.run_nmt", serve="nmt.translate", export="nmt.export"
    ),
    "captioning": dict(
        package="video_caption",
        run="video_caption.run_captioning",
        serve="video_caption.caption",
        export="video_caption.export",
    ),
}


def _flag_names(define_flags):
    fv = flags.FlagValues()
    define_flags(fv)
    return {name for name in fv if fv[name].name == name}


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_each_command_has_the_flags_of_the_host_s_own_command(name):
    task = catalog.task(name)
    host = HOSTS[name]
    assert task is importlib.import_module(host["package"] + ".task").TASK
    for picked in command.COMMANDS:
        own = importlib.import_module(host[picked])
        define = functools.partial(command.define_flags, task, picked)
        generic = _flag_names(define)
        assert generic - {"task", "command"} == _flag_names(own.define_flags), picked
        # --helpshort lists them all
        fv = flags.FlagValues()
        config_lib.define_command_flags(define, fv, "main.py")
        assert set(re.findall(r"^  --(?:\[no\])?(\w+)", fv.module_help("main.py"), re.M)) == generic
    # a training command records the same flags as the host's
    line = ["--task=" + name, "--command=run"]
    _, _, config = command.parse(["acvi_tf.runner", *line])
    own = importlib.import_module(host["run"])
    assert config.recorded == config_lib.parse(own.define_flags, [host["run"]]).recorded
    assert not {"task", "command"} & config.recorded


def test_a_task_is_found_by_its_place_and_registered_once_by_name(monkeypatch):
    monkeypatch.setattr(catalog, "TASKS", dict(catalog.TASKS))
    from nmt import task as nmt_task

    assert catalog.task("nmt.task:TASK") is nmt_task.TASK
    catalog.register("mine", nmt_task.TASK)
    catalog.register("mine", nmt_task.TASK)  # again: the same Task
    assert catalog.task("mine") is nmt_task.TASK and "mine" in catalog.names()
    with pytest.raises(ValueError, match="'translation' is registered already"):
        catalog.register("translation", catalog.task("summarization"))
    for wrong in ("nosuch", "nmt.task", "nmt.task:TASKS", "no_such_module:TASK", "os:path"):
        with pytest.raises(app.UsageError, match="--task=%s names no Task" % wrong):
            catalog.task(wrong)


@pytest.mark.parametrize(
    "line,message",
    [
        ([], "give --task=<captioning, summarization, translation or "),
        (["--task", "translation"], "give --task=<"),
        (["--task=translation", "--command=train"], "--command=train: give --task=<"),
        (["-task=nosuch", "-command", "serve"], "--task=nosuch names no Task: give one of "),
    ],
)
def test_a_command_line_that_picks_nothing_is_one_error_line(line, message, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["acvi_tf/runner/__main__.py", *line])
    with pytest.raises(SystemExit) as stopped:
        command.main()
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: " + message), err


def test_the_task_and_the_command_are_read_in_absl_s_forms():
    for line in (
        ["--task=translation", "--command=serve"],
        ["--task", "translation", "--command", "serve"],
        ["-task=translation", "-command=serve"],
    ):
        task, picked = command.picked(["prog", *line, "--input=-"])
        assert (task, picked) == (catalog.task("translation"), "serve")
    # the last one given, as absl reads a flag given twice
    task, picked = command.picked(["prog", "--task=nmt", "--command=run", "--task=captioning"])
    assert (task, picked) == (catalog.task("captioning"), "run")
    with pytest.raises(app.UsageError):  # after "--": arguments, not flags
        command.picked(["prog", "--", "--task=translation", "--command=serve"])

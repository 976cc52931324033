"""How ``make test`` shares the suite (tests/scheduling.py), what each lane runs
(conftest.REFERENCE_LANE, docs/testing.md), which tests run eagerly and which METEOR
mode they score."""

import glob
import importlib
import json
import os
import re
import subprocess
import sys
import types

import pytest
import scheduling
import tensorflow as tf
import tf_runtime
from tensorflow.python.eager import context

from acvi_tf.metrics import meteor

import conftest
import runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Node:
    """A worker that records the test indexes it is sent."""

    shutting_down = False

    def __init__(self):
        self.sent = []

    def send_runtest_some(self, indexes):
        self.sent.append(indexes)


class _Config:
    """What the scheduler reads of pytest's config: one worker."""

    def getvalue(self, name):
        return ["popen"] if name == "tx" else None


def test_a_free_worker_takes_the_longest_unit_left(monkeypatch):
    durations = {"t.py::a": 1.0, "t.py::b": 30.0, "u.py::c": 5.0, "u.py::d": 20.0}
    monkeypatch.setattr(scheduling, "read_durations", lambda: durations)
    monkeypatch.setattr(scheduling, "UNKNOWN_SECONDS", 0.5)
    scheduler = scheduling.LongestFirstScheduling(_Config())
    node = _Node()
    collection = ["t.py::a", "t.py::b", "u.py::c@u.py", "u.py::d@u.py", "v.py::new"]
    scheduler.registered_collections[node] = collection
    scheduler.assigned_work[node] = {}
    for nodeid in collection:  # the units as loadgroup makes them
        scheduler.workqueue.setdefault(scheduler._split_scope(nodeid), {})[nodeid] = False
    assert list(scheduler.workqueue) == ["t.py::a", "t.py::b", "u.py", "v.py::new"]
    for _ in range(4):
        scheduler._assign_work_unit(node)
    # 30 s, the group's 5 + 20 s, 1 s, and the test the record lacks
    assert node.sent == [[1], [2, 3], [0], [4]]
    assert not scheduler.workqueue


class _Marked:
    """A collected test as ``quick_tests`` reads it: its id and its group, if any."""

    def __init__(self, nodeid, group=None):
        self.nodeid, self.group = nodeid, group

    def get_closest_marker(self, name):
        if name == "xdist_group" and self.group:
            return pytest.mark.xdist_group(self.group).mark
        return None


def test_the_quick_tests_are_under_the_bound_with_their_whole_group(monkeypatch):
    durations = {"a.py::fast": 0.2, "a.py::slow": 5.0, "b.py::x": 0.1, "b.py::y": 3.0}
    monkeypatch.setattr(scheduling, "read_durations", lambda: durations)
    items = [_Marked("a.py::fast"), _Marked("a.py::slow"), _Marked("c.py::new")]
    items += [_Marked("b.py::x", "b.py"), _Marked("b.py::y", "b.py")]
    # b.py::x is fast, but its group's fixture is built by whichever test runs first
    assert scheduling.quick_tests(items) == {"a.py::fast", "c.py::new"}


class _Item:
    """A collected test as grouping reads it: its fixtures, ``(name, scope, module)``."""

    def __init__(self, nodeid, *fixtures):
        self.nodeid, self.group = nodeid, None
        self._fixtureinfo = types.SimpleNamespace(
            name2fixturedefs={
                name: [types.SimpleNamespace(argname=name, scope=scope, func=_defined_in(module))]
                for name, scope, module in fixtures
            }
        )

    def get_closest_marker(self, name):
        return None

    def add_marker(self, marker):
        assert marker.name == "xdist_group" and self.group is None
        self.group = marker.args[0]


def _defined_in(module):
    def fixture():
        pass

    fixture.__module__ = module
    return fixture


def test_a_shared_run_s_tests_share_a_group_as_a_module_fixture_s_do():
    run, module = ("captioner_run", "session", "runs"), ("corpus", "module", "test_b")
    builtin = ("tmp_path_factory", "session", "_pytest.tmpdir")
    items = [
        _Item("tests/test_a.py::x", run, builtin),
        _Item("tests/test_b.py::y", module, run),
        _Item("tests/test_b.py::z", module),
        _Item("tests/test_c.py::w", builtin),
    ]
    scheduling.group_by_shared_fixtures(items)
    groups = [item.group for item in items]
    assert groups == ["runs.py::captioner_run"] * 2 + ["tests/test_b.py", None]


def test_docs_name_each_shared_run_and_the_files_that_use_it():
    with open(os.path.join(ROOT, "docs", "testing.md"), encoding="utf-8") as f:
        page = f.read()
    with open(runs.__file__, encoding="utf-8") as f:
        names = re.findall(r'@pytest\.fixture\(scope="session"\)\ndef (\w+)', f.read())
    assert "captioner_run" in names
    for name in names:
        assert "`%s`" % name in page, name
        for path in glob.glob(os.path.join(ROOT, "tests", "test_*.py")):
            with open(path, encoding="utf-8") as f:
                if re.search(r"def test_\w+\([^)]*\b%s\b" % name, f.read()):
                    assert "`%s`" % os.path.basename(path) in page, (name, path)


def test_a_group_suffix_is_not_part_of_the_recorded_test_id():
    assert scheduling.test_id("tests/t.py::x[a]@tests/t.py") == "tests/t.py::x[a]"
    assert scheduling.test_id("tests/t.py::x[a@b]") == "tests/t.py::x[a@b]"
    assert scheduling.test_id("tests/t.py::x") == "tests/t.py::x"


def test_the_reference_lane_runs_what_docs_testing_md_lists():
    with open(os.path.join(ROOT, "docs", "testing.md"), encoding="utf-8") as f:
        page = f.read()
    section = page.split("### The two lanes")[1].split("###")[0]
    listed = set()
    for row in re.findall(r"^\| (`test_.*?) \|", section, re.M):
        listed.update("tests/" + name for name in re.findall(r"`(test_[^`]+)`", row))
    assert listed == set(conftest.REFERENCE_LANE)


def test_every_reference_entry_names_a_test_file_or_function():
    for entry in conftest.REFERENCE_LANE:
        path, _, name = entry.partition("::")
        assert os.path.isfile(os.path.join(ROOT, path)), entry
        if name:
            module = importlib.import_module(os.path.basename(path)[: -len(".py")])
            assert callable(getattr(module, name, None)), entry


def test_the_docs_quote_the_latest_passing_measurement_of_the_suite():
    with open(os.path.join(ROOT, "bench", "results", "suite_time.jsonl"), encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    latest = {}
    for record in records:
        if record["status"] == 0 and record["lane"] == "current":
            latest[record["target"]] = record
    with open(os.path.join(ROOT, "docs", "testing.md"), encoding="utf-8") as f:
        page = " ".join(f.read().split())
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    for target, record in latest.items():
        minutes, seconds = divmod(round(record["wall_s"]), 60)
        assert "`make %s` %d min %d s" % (target, minutes, seconds) in page, record
    assert "at revision %s " % latest["test"]["revision"] in page
    minutes = round(latest["test"]["wall_s"]) // 60
    assert "run the test suite (%d minutes on 2 cores)" % minutes in readme


@pytest.mark.eager
def test_a_test_marked_eager_runs_its_functions_untraced():
    assert bool(tf.function(tf.executing_eagerly)())


def test_every_other_test_traces_its_functions():
    assert not bool(tf.function(tf.executing_eagerly)())


def test_untraced_runs_functions_eagerly_inside_only():
    with conftest.untraced():
        assert bool(tf.function(tf.executing_eagerly)())
    assert not bool(tf.function(tf.executing_eagerly)())


@pytest.mark.parametrize("eager", [False, True])
def test_a_launched_command_runs_as_python_m_traced_or_with_eager_untraced(
    eager, tmp_path, monkeypatch
):
    """``launch.py`` (``conftest.python_m``): the module as ``__main__`` with its own
    arguments, its functions traced, or with ``--eager`` run eagerly (here in this
    process, which a real launch would start anew)."""
    (tmp_path / "probe.py").write_text(
        "import json, sys\nimport tensorflow as tf\n"
        "traced = not bool(tf.function(tf.executing_eagerly)())\n"
        "json.dump([__name__, sys.argv[1:], traced], open(sys.argv[1], 'w'))\n"
    )
    launcher, *argv = conftest.python_m("probe", str(tmp_path / "out.json"), eager=eager)[1:]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [launcher, *argv])
    monkeypatch.setattr(sys, "path", [os.path.dirname(launcher)] + sys.path)
    settings = []
    monkeypatch.setattr(tf_runtime, "eager_ops_as_kernels", lambda: settings.append("kernels"))
    monkeypatch.setattr(tf_runtime, "graph_rewrites", lambda on: settings.append(on))
    try:
        importlib.import_module("launch").main()
    finally:
        tf.config.run_functions_eagerly(False)
        sys.modules.pop("probe", None)
    name, args, traced = json.loads((tmp_path / "out.json").read_text())
    assert (name, args, traced) == ("__main__", [str(tmp_path / "out.json")], not eager)
    assert settings == ["kernels", False]  # as this process runs TensorFlow


# "cats"/"sitting" match "cat"/"sat" by stem only: the full mode scores higher
STEMMED = (["the cat sat on the mat"], ["the cats were sitting on the mat"])


@pytest.fixture(scope="module")
def meteor_asked_full_in_a_module_fixture():
    return meteor.meteor(*STEMMED, "full")[0]


def test_a_module_fixture_scores_meteor_in_the_exact_mode(meteor_asked_full_in_a_module_fixture):
    assert meteor_asked_full_in_a_module_fixture == meteor.meteor(*STEMMED, "exact")[0]


def test_docs_name_every_file_that_runs_steps_untraced():
    with open(os.path.join(ROOT, "docs", "testing.md"), encoding="utf-8") as f:
        page = f.read()
    untraced = re.compile(r"^@pytest\.mark\.eager\b|with (conftest\.)?untraced\(\):", re.M)
    marked = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "test_*.py"))):
        with open(path, encoding="utf-8") as f:
            if untraced.search(f.read()):
                marked.append(os.path.basename(path))
    assert "test_run_summarization.py" in marked
    for name in marked:
        if name != "test_scheduling.py":
            assert "`%s`" % name in page, name


def test_the_test_process_traces_without_graph_rewrites():
    """conftest turns Grappler off for the tests not marked ``optimized``."""
    assert tf.config.optimizer.get_experimental_options()["disable_meta_optimizer"] is True


@pytest.mark.optimized
def test_a_test_marked_optimized_traces_with_graph_rewrites():
    assert not tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer")


def test_the_test_process_runs_each_eager_op_as_its_kernel():
    """conftest runs eager ops as kernels: none is wrapped in a function of its own, as
    TensorFlow wraps each by default (``tf_runtime.eager_ops_as_kernels``)."""
    tf.math.cumprod(tf.constant([[2.0, 3.0]]), axis=1, exclusive=True)
    names = context.context().list_function_names()
    assert not [name for name in names if name.startswith("__wrapped__")]


def test_xdist_s_controller_imports_no_tensorflow():
    """The controller (``-n``) hands out the tests and runs none: importing conftest
    imports no TensorFlow, and only a worker or a run of one process starts it."""
    code = "import sys; sys.path.insert(0, 'tests'); import conftest; print(sorted(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and "'tensorflow'" not in done.stdout, done.stderr[-2000:]

    def config(worker=False, **options):
        values = dict(dict(dist="loadgroup", tx=["popen"] * 2, collectonly=False), **options)
        namespace = types.SimpleNamespace(getoption=lambda name, default=None: values[name])
        if worker:
            namespace.workerinput = {}
        return namespace

    assert conftest.is_xdist_controller(config())
    assert not conftest.is_xdist_controller(config(worker=True))
    assert not conftest.is_xdist_controller(config(tx=[]))  # one process: --dist alone
    assert not conftest.is_xdist_controller(config(collectonly=True))

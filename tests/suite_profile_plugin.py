"""A pytest plugin for ``bench/suite_profile.py`` (``-p suite_profile_plugin``): one JSON
line per test with its CPU seconds in the test process (``own``), in the processes it
started and waited for (``children``) and, of ``own``, in TensorFlow's tracing of
``tf.function`` graphs (``trace``), in the first call of each traced graph (``first_calls``:
the runtime's instantiation of the graph, and one run) and in its later calls
(``later_calls``: the steps themselves), and the programs it started (``launches``), with
the tracing and first calls split by graph (``graphs``: ``{name: [traces, trace seconds,
first-call seconds]}``, the name the Python function's). The lines go to the file
``SUITE_PROFILE_OUT`` names; each xdist worker appends its own."""

import collections
import json
import os
import resource
import subprocess
import time
import weakref
from typing import Iterator, Optional

import pytest
from tensorflow.python.eager.polymorphic_function import atomic_function
from tensorflow.python.framework import func_graph

_TRACE = {"seconds": 0.0, "depth": 0}
_CALLS = {"first_calls": 0.0, "later_calls": 0.0, "depth": 0}
_CALLED = weakref.WeakSet()  # the graphs called at least once
_LAUNCHES = collections.Counter()
_GRAPHS = collections.defaultdict(lambda: [0, 0.0, 0.0])  # name: traces, trace s, first s
_trace = func_graph.func_graph_from_py_func
_call = atomic_function.AtomicFunction.call_preflattened
_popen_init = subprocess.Popen.__init__


def _graph_name(name) -> str:
    """The Python function's name in a traced or an instantiated graph's name
    (``__inference_train_step_123`` -> ``train_step``)."""
    name = name.decode() if isinstance(name, bytes) else str(name)
    if name.startswith("__inference_"):
        name = name[len("__inference_") :].rsplit("_", 1)[0]
    return name


def _timed_trace(name, *args, **kwargs):
    """``func_graph_from_py_func``, its CPU counted once however deep it nests (under
    the outermost graph's name)."""
    _TRACE["depth"] += 1
    start = time.process_time()
    try:
        return _trace(name, *args, **kwargs)
    finally:
        _TRACE["depth"] -= 1
        if not _TRACE["depth"]:
            seconds = time.process_time() - start
            _TRACE["seconds"] += seconds
            graph = _GRAPHS[_graph_name(name)]
            graph[0] += 1
            graph[1] += seconds


def _timed_call(self, args):
    """``AtomicFunction.call_preflattened``: its CPU counted as a first or a later call
    when it runs the graph (not when a trace only adds a call of it to another graph)."""
    if _TRACE["depth"] or _CALLS["depth"]:
        return _call(self, args)
    _CALLS["depth"] += 1
    start = time.process_time()
    try:
        return _call(self, args)
    finally:
        _CALLS["depth"] -= 1
        seconds = time.process_time() - start
        if self in _CALLED:
            _CALLS["later_calls"] += seconds
        else:
            _CALLS["first_calls"] += seconds
            _GRAPHS[_graph_name(self.name)][2] += seconds
        _CALLED.add(self)


def _counted_popen(self, args, *rest, **kwargs):
    """``Popen.__init__``, counting the program (``python -m <module>`` for Python)."""
    words = [args] if isinstance(args, (str, bytes)) else list(args)
    program = os.path.basename(str(words[0]).split()[0]) if words else "?"
    if program.startswith("python") and len(words) > 2 and words[1] == "-m":
        program += " -m " + str(words[2])
    _LAUNCHES[program] += 1
    _popen_init(self, args, *rest, **kwargs)


func_graph.func_graph_from_py_func = _timed_trace
atomic_function.AtomicFunction.call_preflattened = _timed_call
subprocess.Popen.__init__ = _counted_popen


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Optional[pytest.Item]) -> Iterator[None]:
    own, children = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    trace = _TRACE["seconds"]
    calls = {key: _CALLS[key] for key in ("first_calls", "later_calls")}
    _LAUNCHES.clear()
    _GRAPHS.clear()
    yield
    record = dict(
        id=item.nodeid,
        own=round(_cpu(resource.RUSAGE_SELF) - own, 3),
        children=round(_cpu(resource.RUSAGE_CHILDREN) - children, 3),
        trace=round(_TRACE["seconds"] - trace, 3),
        **{key: round(_CALLS[key] - before, 3) for key, before in calls.items()},
        launches=dict(_LAUNCHES),
        graphs={name: [n, round(t, 3), round(f, 3)] for name, (n, t, f) in _GRAPHS.items()},
    )
    with open(os.environ["SUITE_PROFILE_OUT"], "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")

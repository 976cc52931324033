"""How ``make test`` shares the suite between its pytest-xdist workers.

A test that uses a module-scoped fixture of its file goes to the same worker as the
file's other such tests (an ``xdist_group`` named after the file), and a test that uses a
shared run (``runs.py``) to the same worker as the run's other tests, so that each
fixture is built once; every other test is a unit of its own. Each worker that is free
takes the unit that took longest in the recorded run (``tests/durations.json``: seconds
of setup, call and teardown per test id), so that the long ones start first and the two
workers finish together. A test the record lacks counts ``UNKNOWN_SECONDS``.

``pytest --store-durations`` (with or without ``-n``) writes the record anew from the
run it ends.
"""

import json
import os
from typing import Dict, Iterable, Sequence, Set

import pytest
from xdist.scheduler import LoadGroupScheduling

from acvi_tf import files

DURATIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "durations.json")
UNKNOWN_SECONDS = 1.0
# ``make test-fast`` runs the tests that took less than this in the recorded run, as did
# every test of their group (whose first test pays for the group's fixture), and those
# the record lacks (``quick_tests``; conftest.py marks them ``quick``); docs/testing.md
# gives the measurements behind the bound.
QUICK_SECONDS = 1.0


def test_id(nodeid: str) -> str:
    """``nodeid`` without the ``@group`` suffix that ``--dist loadgroup`` gives it."""
    name, at, group = nodeid.rpartition("@")
    return name if at and "]" not in group and "::" not in group else nodeid


def read_durations(path: str = DURATIONS) -> Dict[str, float]:
    """The recorded seconds per test id; empty when there is no record."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def group_by_shared_fixtures(items: Iterable[pytest.Item]) -> None:
    """Marks each test that uses a shared run (a session-scoped fixture of ``runs.py``)
    with the run's group, and each other test that uses a module-scoped fixture with its
    file's group."""
    for item in items:
        fixtures = getattr(item, "_fixtureinfo", None)
        if fixtures is None or item.get_closest_marker("xdist_group"):
            continue
        definitions = [d for ds in fixtures.name2fixturedefs.values() for d in ds]
        shared = sorted(
            d.argname
            for d in definitions
            if d.scope == "session" and getattr(d.func, "__module__", None) == "runs"
        )
        if shared:
            item.add_marker(pytest.mark.xdist_group("runs.py::" + shared[0]))
        elif any(d.scope == "module" for d in definitions):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def _unit(item: pytest.Item) -> str:
    """The unit a worker takes ``item`` in: its group, or itself."""
    mark = item.get_closest_marker("xdist_group")
    return mark.args[0] if mark else item.nodeid


def quick_tests(items: Sequence[pytest.Item]) -> Set[str]:
    """The ids of the tests ``make test-fast`` runs (``QUICK_SECONDS``).

    Args:
      items: the collected tests, grouped (``group_by_shared_fixtures``).
    """
    durations = read_durations()
    slowest: Dict[str, float] = {}
    for item in items:
        unit, seconds = _unit(item), durations.get(item.nodeid, 0.0)  # new: quick
        slowest[unit] = max(slowest.get(unit, 0.0), seconds)
    return {item.nodeid for item in items if slowest[_unit(item)] < QUICK_SECONDS}


class LongestFirstScheduling(LoadGroupScheduling):
    """``--dist loadgroup`` that hands a free worker the longest unit left."""

    def __init__(self, config: pytest.Config, log=None) -> None:
        super().__init__(config, log)
        self.durations = read_durations()

    def _cost(self, unit: Dict[str, bool]) -> float:
        return sum(self.durations.get(test_id(n), UNKNOWN_SECONDS) for n in unit)

    def _assign_work_unit(self, node) -> None:
        longest = max(self.workqueue, key=lambda scope: self._cost(self.workqueue[scope]))
        self.workqueue.move_to_end(longest, last=False)
        super()._assign_work_unit(node)


class DurationRecorder:
    """Adds up each test's setup, call and teardown seconds; writes them at the end."""

    def __init__(self) -> None:
        self.seconds: Dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = test_id(report.nodeid)
        self.seconds[name] = round(self.seconds.get(name, 0.0) + report.duration, 2)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):
            return  # the controller writes the record
        record = json.dumps(dict(sorted(self.seconds.items())), indent=0)
        files.atomic_write_text(DURATIONS, record + "\n")

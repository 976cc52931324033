"""bench/suite_time.py's speed probe: the fastest of its runs of a fixed piece of work."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import suite_time  # noqa: E402 (bench/ is not a package)


def test_the_probe_reads_the_fastest_of_its_runs(monkeypatch):
    clock = iter([0.0, 5.0, 10.0, 12.0])  # runs of 5 s and 2 s
    monkeypatch.setattr(suite_time.time, "process_time", lambda: next(clock))
    assert suite_time.speed_probe(repeats=2) == 2.0

"""bench/suite_time.py's speed probe: the fastest of its runs of a fixed piece of work,
and the record docs/testing.md quotes with it."""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import suite_time  # noqa: E402 (bench/ is not a package)


def test_the_probe_reads_the_fastest_of_its_runs(monkeypatch):
    clock = iter([0.0, 5.0, 10.0, 12.0])  # runs of 5 s and 2 s
    monkeypatch.setattr(suite_time.time, "process_time", lambda: next(clock))
    assert suite_time.speed_probe(repeats=2) == 2.0


def test_the_testing_page_quotes_the_first_record_with_a_probe():
    with open(os.path.join(ROOT, "bench", "results", "suite_time.jsonl"), encoding="utf-8") as f:
        record = next(r for r in map(json.loads, f) if "speed_probe_s" in r)
    with open(os.path.join(ROOT, "docs", "testing.md"), encoding="utf-8") as f:
        page = " ".join(f.read().split())
    minutes, seconds = divmod(round(record["wall_s"]), 60)
    before, after = record["speed_probe_s"]
    quoted = (
        "The first such record, of %s on an AMD EPYC with 2 cores and AVX2, read %.3f s and "
        "%.3f s: its suite took %d min %d s of wall time and %s s of CPU and failed"
        % (record["revision"], before, after, minutes, seconds, format(round(record["cpu_s"]), ","))
    )
    assert quoted in page
    assert record["status"] != 0 and record["pytest"].startswith("1 failed")

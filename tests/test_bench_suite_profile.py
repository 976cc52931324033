"""bench/suite_profile.py: its sums by file, and docs/testing.md quotes its record."""

import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import suite_profile  # noqa: E402 (bench/ is not a package)


def test_each_file_sums_its_tests_most_cpu_first():
    calls = dict(first_calls=1.5, later_calls=0.5)
    graphs = dict(train_step=[1, 0.5, 1.0], search=[2, 1.0, 0.3])
    tests = [
        dict(id="tests/a.py::x", own=1.0, children=0.5, trace=0.5, launches={"java": 1}, **calls),
        dict(id="tests/b.py::y[1]", own=3.0, children=0.0, trace=2.0, launches={}, **calls),
        dict(id="tests/b.py::y[2]", own=0.0, children=0.0, trace=0.0, launches={}, graphs=graphs),
        # a line of a run before the call keys
        dict(id="tests/a.py::z", own=2.0, children=0.0, trace=0.0, launches={"java": 2}),
    ]
    summary = suite_profile.summarize(tests)
    assert summary["totals"] == dict(
        own=6.0, children=0.5, trace=2.5, first_calls=3.0, later_calls=1.0, tests=4
    )
    assert [row["file"] for row in summary["files"]] == ["tests/a.py", "tests/b.py"]
    assert summary["files"][0] == dict(
        file="tests/a.py", own=3.0, children=0.5, trace=0.5, tests=2, **calls
    )
    assert summary["launches"] == {"java": 3}
    # each graph's traces, tracing and first calls, the most first
    assert summary["graphs"] == [
        dict(graph="train_step", traces=1, trace=0.5, first_calls=1.0),
        dict(graph="search", traces=2, trace=1.0, first_calls=0.3),
    ]


def test_the_testing_page_quotes_the_record_of_its_revision():
    with open(suite_profile.RECORDS, encoding="utf-8") as f:
        [record] = [r for r in map(json.loads, f) if r["revision"] == "90c78f9"]
    with open(os.path.join(ROOT, "docs", "testing.md"), encoding="utf-8") as f:
        quoted = re.search(r"<!-- suite-profile -->(.*?)<!-- /suite-profile -->", f.read(), re.S)
    numbers = [float(n.replace(",", "")) for n in re.findall(r"[\d,]+(?= s)", quoted.group(1))]
    totals = record["totals"]
    largest = record["files"][0]
    expected = [totals["own"], totals["trace"], totals["children"], largest["own"]]
    expected.append(largest["trace"] + largest["first_calls"])
    graphs = {g["graph"]: g for g in record["graphs"]}
    steps = [graphs[name] for name in ("gradients", "traced_step", "train_step")]
    expected += [graphs["decode_batch"]["trace"], graphs["decode_batch"]["first_calls"]]
    expected.append(sum(g["trace"] + g["first_calls"] for g in steps))
    assert numbers == [round(n) for n in expected]
    traces = [int(n) for n in re.findall(r"(\d+) traces", quoted.group(1))]
    assert traces == [graphs["decode_batch"]["traces"], sum(g["traces"] for g in steps)]
    assert "`%s`" % os.path.basename(largest["file"]) in quoted.group(1)

"""Where the suite's CPU goes: each test's CPU in the test process, in the processes it
starts, in TensorFlow's tracing of graphs and in the graphs' first and later calls,
summed by file and, for tracing and first calls, by graph.

Runs ``pytest -n WORKERS tests`` in this checkout with ``tests/suite_profile_plugin.py``
(one JSON line per test: ``own``, ``children``, ``trace``, ``first_calls`` and
``later_calls`` seconds, the programs it started and its ``graphs``), or reads such lines
from ``--from_jsonl`` (a run made before; lines without the call keys or the graphs count
none), and appends one record to ``bench/results/suite_profile.jsonl``: the totals, every
file's sums, most first, the ``GRAPHS_KEPT`` graphs that took most tracing and first
calls, and the programs the suite started. CPU seconds, not wall: a run on a machine
doing other work reads higher (its caches and cores are shared), which ``--note`` says.
A rerun adds a record and never changes one a document quotes.

Usage: python bench/suite_profile.py [--workers=2] [--from_jsonl=FILE --revision=REV]
  [--note=TEXT]
"""

import collections
import datetime
import json
import os
import subprocess
import sys
import tempfile
from typing import Dict, Iterable, List

from absl import flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from acvi_tf import config as config_lib  # noqa: E402

import _report  # noqa: E402 (bench/ and the project root go on the path first)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = os.path.join(ROOT, "bench", "results", "suite_profile.jsonl")
# CPU in the first call of each traced graph (its instantiation) and in the later calls
CALL_KEYS = ("first_calls", "later_calls")
# The graphs kept in a record, by their tracing and first calls (most first)
GRAPHS_KEPT = 20


def summarize(tests: Iterable[Dict]) -> Dict:
    """The totals, each file's sums (most CPU first), each graph's traces, tracing and
    first calls (the most first) and the programs started, of the plugin's per-test
    lines."""
    totals = collections.Counter()
    by_file = collections.defaultdict(collections.Counter)
    by_graph = collections.defaultdict(collections.Counter)
    launches = collections.Counter()
    for test in tests:
        for graph, (traces, trace, first) in test.get("graphs", {}).items():  # newer runs'
            by_graph[graph].update(traces=traces, trace=trace, first_calls=first)
        name = test["id"].split("::")[0]
        for key in ("own", "children", "trace") + CALL_KEYS:
            if key in test:  # the call keys: in lines of runs since they were added
                totals[key] += test[key]
                by_file[name][key] += test[key]
        totals["tests"] += 1
        by_file[name]["tests"] += 1
        launches.update(test["launches"])
    files = [
        dict(file=name, **{k: round(v, 1) for k, v in sums.items()})
        for name, sums in sorted(
            by_file.items(), key=lambda item: -(item[1]["own"] + item[1]["children"])
        )
    ]
    graphs = [
        dict(graph=name, **{k: round(v, 1) for k, v in sums.items()})
        for name, sums in sorted(
            by_graph.items(), key=lambda item: -(item[1]["trace"] + item[1]["first_calls"])
        )
    ]
    return dict(
        totals={k: round(v, 1) for k, v in totals.items()},
        files=files,
        graphs=graphs[:GRAPHS_KEPT],
        launches=dict(launches.most_common()),
    )


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this script's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_integer("workers", 2, "pytest-xdist workers.", lower_bound=1, flag_values=fv)
    flags.DEFINE_string(
        "from_jsonl", None, "The plugin's lines from a run made before.", flag_values=fv
    )
    flags.DEFINE_string(
        "revision", None, "The revision that made --from_jsonl's run.", flag_values=fv
    )
    flags.DEFINE_string("note", "", "What the record should say of the run.", flag_values=fv)


def _profiled_run(workers: int) -> List[Dict]:
    """Runs the suite with the plugin; returns its per-test lines."""
    with tempfile.TemporaryDirectory(prefix="suite_profile-") as folder:
        out = os.path.join(folder, "tests.jsonl")
        env = dict(
            os.environ,
            SUITE_PROFILE_OUT=out,
            PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests"), ROOT]),
            TF_NUM_INTRAOP_THREADS="1",
            TF_NUM_INTEROP_THREADS="1",
        )
        command = [sys.executable, "-m", "pytest", "-q", "-n", str(workers), "tests"]
        subprocess.run(command + ["-p", "suite_profile_plugin"], cwd=ROOT, env=env)
        with open(out, encoding="utf-8") as f:
            return [json.loads(line) for line in f]


def run(args: config_lib.Config) -> None:
    """Profiles the suite (or reads a profile); appends its record.

    Args:
      args: the flags (``define_flags``).
    """
    if args.from_jsonl:
        with open(args.from_jsonl, encoding="utf-8") as f:
            tests = [json.loads(line) for line in f]
    else:
        tests = _profiled_run(args.workers)
    record = dict(
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        revision=args.revision or _report.git_revision(),
        machine=_report.machine(),
        note=args.note,
        **summarize(tests),
    )
    os.makedirs(os.path.dirname(RECORDS), exist_ok=True)
    with open(RECORDS, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
    totals = record["totals"]
    print(
        "%d tests: %.0f s of CPU in the test processes (%.0f s of it tracing, %.0f s in "
        "the graphs' first calls, %.0f s in their later calls), %.0f s in the processes "
        "they started"
        % (
            totals["tests"],
            totals["own"],
            totals["trace"],
            totals.get("first_calls", 0.0),
            totals.get("later_calls", 0.0),
            totals["children"],
        )
    )
    print("    own children   trace   first   later  file")
    for row in record["files"][:15]:
        columns = [row["own"], row["children"], row["trace"]]
        columns += [row.get(key, 0.0) for key in CALL_KEYS]
        print("%7.1f " * 5 % tuple(columns) + " " + row["file"])


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

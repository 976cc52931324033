"""The wall time of `make test` (and `make test-fast`) from a fresh clone, as README and
docs/testing.md state it.

Clones the committed HEAD of this checkout into a new folder, builds the lane's
environment there (`make venv sysdeps browser`, not timed: pip's cache makes it minutes),
then times each target as a whole process: wall seconds, and the CPU seconds of every
process it ran (pytest's workers and the commands the tests start). The pytest summary
line and the slowest tests come from the target's own output. Each measurement is
appended as one JSON line to ``bench/results/suite_time.jsonl``, with ``speed_probe_s``:
the CPU seconds of a fixed piece of Python work (``speed_probe``) just before and just
after the target, which says how fast the machine ran at the time; a rerun adds a line
and never changes one a document quotes.

With ``--store_durations`` the run of ``make test`` also records each test's seconds
(``pytest --store-durations``) and the record is copied to this checkout's
``tests/durations.json``, from which ``tests/scheduling.py`` orders the next runs.

Usage: python bench/suite_time.py [--lane=current] [--targets=test,test-fast]
  [--store_durations] [--keep] (leave the clone in place)
"""

import datetime
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from absl import flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from acvi_tf import config as config_lib  # noqa: E402

import _report  # noqa: E402 (bench/ and the project root go on the path first)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = os.path.join(ROOT, "bench", "results", "suite_time.jsonl")
SUMMARY = re.compile(r"^=+ (.*(passed|failed).*) in [\d.]+s.*=+$")


def speed_probe(repeats: int = 3) -> float:
    """The CPU seconds of a fixed piece of single-threaded Python work (string
    formatting, dict lookups and updates), the fastest of ``repeats``: what the
    suite spends most of its time on is Python of this kind (TensorFlow's tracing), so
    the probe says how fast this machine runs it at the time of a measurement, and the
    records of two machines or hours compare through it.

    Args:
      repeats: how many times the work runs.

    Returns:
      The fewest CPU seconds one run of the work took.
    """
    fastest = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        table = {}
        for i in range(1_000_000):
            key = "k%d" % (i % 1000)
            table[key] = table.get(key, 0) + len(key)
        fastest = min(fastest, time.process_time() - start)
    return fastest


def _timed(command, cwd, env=None):
    """Runs ``command``; returns (status, wall seconds, CPU seconds of its processes,
    output)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.returncode, wall, cpu, done.stdout + done.stderr


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this script's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_enum("lane", "current", ["current", "tf215"], "The lane.", flag_values=fv)
    flags.DEFINE_list("targets", ["test", "test-fast"], "The make targets.", flag_values=fv)
    flags.DEFINE_boolean(
        "store_durations", False, "Copy make test's durations record here.", flag_values=fv
    )
    flags.DEFINE_boolean("keep", False, "Leave the clone in place.", flag_values=fv)


def run(args: config_lib.Config) -> None:
    """Clones, builds the environment, times each target; appends the records.

    Args:
      args: the flags (``define_flags``).
    """
    revision = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    clone = tempfile.mkdtemp(prefix="suite_time-")
    try:
        subprocess.run(["git", "clone", "--quiet", ROOT, clone], check=True)
        lane = ["LANE=%s" % args.lane]
        built = subprocess.run(
            ["make", *lane, "venv", "sysdeps", "browser"],
            cwd=clone,
            check=True,
            capture_output=True,
            text=True,
        )
        environment = [line for line in built.stdout.splitlines() if line.startswith("Lane ")]
        for target in args.targets:
            store = args.store_durations and target == "test"
            env = dict(os.environ, PYTEST_ADDOPTS="--store-durations") if store else None
            probe = speed_probe()
            status, wall, cpu, output = _timed(["make", *lane, target], clone, env)
            summary = [m.group(1) for m in map(SUMMARY.match, output.splitlines()) if m]
            slowest = [line for line in output.splitlines() if re.match(r"^\d+\.\d+s ", line)]
            record = dict(
                date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                revision=revision,
                lane=args.lane,
                target=target,
                status=status,
                wall_s=round(wall, 1),
                cpu_s=round(cpu, 1),
                pytest=summary[-1] if summary else None,
                slowest=slowest[:10],
                machine=_report.machine(),
                speed_probe_s=[round(probe, 3), round(speed_probe(), 3)],
                environment=environment[-1] if environment else None,
                how="fresh clone of %s, environment built first (not timed), then `make %s %s`"
                % (revision, " ".join(lane), target),
            )
            os.makedirs(os.path.dirname(RECORDS), exist_ok=True)
            with open(RECORDS, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
            print(
                "make %s (%s lane): %s, %.0f s wall, %.0f s CPU; speed probe %s s"
                % (target, args.lane, record["pytest"], wall, cpu, record["speed_probe_s"])
            )
            if status:
                print(output[-3000:], file=sys.stderr)
            elif store:
                durations = os.path.join("tests", "durations.json")
                shutil.copy(os.path.join(clone, durations), os.path.join(ROOT, durations))
    finally:
        if not args.keep:
            shutil.rmtree(clone, ignore_errors=True)


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

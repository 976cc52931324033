"""Shared parts of the benchmark scripts: the run's settings, and the result they print,
keep in ``bench/results/`` and render into BENCHMARKS.md.

A result is one JSON file per benchmark configuration, ``bench/results/<key>.json``: its
title, the command that produced it, the date, the machine (CPU model, cores, GPU if
any), the git revision, the table and notes, and optionally a ``reading`` (the
interpretation, written by hand after the run). A new run of the same configuration
replaces its file (and drops the reading, which was about the old numbers); BENCHMARKS.md
is then generated from all files, so it holds the latest result of every benchmark.
``bench/compare_contexts.py`` also keeps every variant's runs as records that no run
replaces (``bench/tables.py``); its results file shows the latest record of each.
``python bench/_report.py`` regenerates it by hand.
"""

import datetime
import glob
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS_MD = os.path.join(ROOT, "BENCHMARKS.md")
RESULTS = os.path.join(ROOT, "bench", "results")
sys.path.insert(0, ROOT)

from acvi_tf import builders, files  # noqa: E402 (the project root goes on the path first)

# BENCHMARKS.md's order: the scripts, then each script's results by key.
SCRIPTS = (
    "bench/compare_contexts.py",
    "bench/acvi_gradient_variance.py",
    "bench/train_step.py",
    "bench/host_step.py",
    "bench/context_layer.py",
    "bench/encoder_lstm.py",
    "bench/decode_speed.py",
    "bench/peers.py",
)


def machine() -> str:
    """'CPU model, N cores[, GPU name]' for the machine running the benchmark."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    description = "%s, %d cores" % (cpu, os.cpu_count() or 0)
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        names = [
            tf.config.experimental.get_device_details(g).get("device_name", g.name) for g in gpus
        ]
        description += ", GPU: " + ", ".join(names)
    return description


def has_gpu() -> bool:
    """Whether TensorFlow sees a GPU."""
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))


def ratio_cell(times: Sequence[float], baseline: Sequence[float]) -> str:
    """ "median (min-max)" of the per-round ratios ``times[r] / baseline[r]``.

    Rounds are interleaved, so the two times of a round saw the same load on the machine;
    the ratio of each pair cancels drift that a ratio of the two medians would keep.
    """
    ratios = [t / b for t, b in zip(times, baseline)]
    return "%.3f (%.2f-%.2f)" % (statistics.median(ratios), min(ratios), max(ratios))


def time_interleaved(
    calls: Mapping[str, Callable[[], Any]], repeats: int, min_seconds: float = 0.0
) -> Tuple[Dict[str, List[float]], Dict[str, List[float]]]:
    """Times each of ``calls`` (name -> function of no arguments) over ``repeats`` rounds,
    interleaved (A B C ... then C B A ...: the order flips every round), after one untimed
    round: a function's first call after the others were traced ran up to 10x slower.

    With ``min_seconds``, a round calls each function as many times as take about that
    long by the untimed round, so that a short function's time is not one scheduler slice.

    Returns:
      ``(wall, cpu)``: name -> the seconds per call of each round, by the clock and in this
      process's CPU time (all threads; on a shared machine the steadier of the two).
    """
    wall = {name: [] for name in calls}
    cpu = {name: [] for name in calls}
    count = dict.fromkeys(calls, 1)
    names = list(calls)
    for repeat in range(repeats + 1):
        for name in names if repeat % 2 else names[::-1]:
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(count[name]):
                calls[name]()
            seconds = time.perf_counter() - start
            if repeat:
                wall[name].append(seconds / count[name])
                cpu[name].append((time.process_time() - start_cpu) / count[name])
            elif min_seconds:
                count[name] = max(1, math.ceil(min_seconds / seconds))
    return wall, cpu


def precision_name(precision: str) -> str:
    """A ``--mixed_precision`` value as a table names it."""
    return "float32" if precision == "none" else precision


def settings(flag_values: Any) -> str:
    """The precision and compilation flags of a run: "" or ", mixed_bfloat16, XLA" etc."""
    policy = builders.precision_policy(flag_values.mixed_precision)
    return "".join(
        text
        for text, on in ((", " + policy, policy != "float32"), (", XLA", flag_values.jit_compile))
        if on
    )


def git_revision() -> str:
    """Short hash of HEAD, with '+dirty' when tracked files other than the results and
    BENCHMARKS.md (which the benchmarks themselves write) have uncommitted changes."""

    def run(*args):
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()

    revision = run("rev-parse", "--short", "HEAD") or "unknown"
    changed = run(
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ".",
        ":(exclude)BENCHMARKS.md",
        ":(exclude)bench/results",
    )
    return revision + ("+dirty" if changed else "")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def result_key(config: Sequence[str] = ()) -> str:
    """The results file name of this script run with ``config`` (its settings that change
    what is measured) on this kind of device: ``[a-z0-9_.-]``."""
    script = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    parts = [script, *config, "gpu" if has_gpu() else "cpu"]
    text = "-".join(str(p).strip(" ,") for p in parts if str(p).strip(" ,"))
    return re.sub(r"[^a-z0-9_.]+", "-", text.lower()).strip("-")


def load(config: Sequence[str] = ()) -> Optional[dict]:
    """The kept result of this script with ``config`` (a dict), or None."""
    path = os.path.join(RESULTS, result_key(config) + ".json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def emit(
    title: str,
    header: Sequence[str],
    rows: Sequence[Sequence[Any]],
    notes: Sequence[str] = (),
    config: Sequence[str] = (),
    data: Any = None,
) -> None:
    """Prints the table, keeps it as ``bench/results/<key>.json``, renders BENCHMARKS.md.

    Args:
      title: the section title.
      header: the table's column names.
      rows: the table's rows.
      notes: lines printed under the table (settings, what a column means).
      config: the settings that make this a different benchmark (``result_key``); a new
        run with the same ones replaces the file.
      data: optional raw numbers (per seed, per round) kept in the file, not rendered.
    """
    key = result_key(config)
    script = os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)
    result = dict(
        key=key,
        title=title,
        script=script,
        command=" ".join(["python", script] + sys.argv[1:]),
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        machine=machine(),
        revision=git_revision(),
        header=list(header),
        rows=[[str(c) for c in row] for row in rows],
        notes=list(notes),
    )
    if data is not None:
        result["data"] = data
    print(_section(result))
    files.atomic_write_text(
        os.path.join(RESULTS, key + ".json"), json.dumps(result, indent=1) + "\n"
    )
    render()


def _section(result):
    lines = [
        "### %s" % result["title"],
        "",
        "%s; %s; revision %s. `%s`"
        % (result["date"], result["machine"], result["revision"], result["command"]),
        "",
        markdown_table(result["header"], result["rows"]),
        "",
    ]
    lines += [n for n in result["notes"]] + ([""] if result["notes"] else [])
    if result.get("reading"):
        lines += ["Reading: " + result["reading"], ""]
    return "\n".join(lines)


def render() -> None:
    """Writes BENCHMARKS.md from every file in ``bench/results/``."""
    results = []
    for path in glob.glob(os.path.join(RESULTS, "*.json")):
        with open(path, encoding="utf-8") as f:
            results.append(json.load(f))

    def order(result):
        script = result["script"]
        rank = SCRIPTS.index(script) if script in SCRIPTS else len(SCRIPTS)
        return rank, script, result["key"]

    blocks = [
        "# Benchmarks",
        "",
        "Generated by `bench/_report.py` from `bench/results/*.json`, the latest result of "
        "each benchmark; do not edit by hand. Each script's docstring says what it measures; "
        "`make bench` runs them. Ratios come from one process, variants interleaved; "
        "absolute CPU times are only indicative.",
        "",
    ]
    script = None
    for result in sorted(results, key=order):
        if result["script"] != script:
            script = result["script"]
            blocks += ["## `%s`" % script, ""]
        blocks.append(_section(result))
    files.atomic_write_text(BENCHMARKS_MD, "\n".join(blocks).rstrip() + "\n")


if __name__ == "__main__":
    render()

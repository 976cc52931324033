"""Shared parts of the benchmark scripts: the run's settings, and the table they print and
append to BENCHMARKS.md.

Each appended block records the date, the machine (CPU model, cores, GPU if any) and the
git revision, so numbers from different runs are never mixed up.
"""

import datetime
import os
import platform
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS_MD = os.path.join(ROOT, "BENCHMARKS.md")


def machine():
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


def has_gpu():
    """Whether TensorFlow sees a GPU."""
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))


def ratio_cell(times, baseline):
    """ "median (min-max)" of the per-round ratios ``times[r] / baseline[r]``.

    Rounds are interleaved, so the two times of a round saw the same load on the machine;
    the ratio of each pair cancels drift that a ratio of the two medians would keep.
    """
    ratios = [t / b for t, b in zip(times, baseline)]
    return "%.3f (%.2f-%.2f)" % (statistics.median(ratios), min(ratios), max(ratios))


def settings(flag_values):
    """The precision and compilation flags of a run: "" or ", mixed_float16, XLA" etc."""
    return "".join(
        text
        for text, on in (
            (", mixed_float16", flag_values.mixed_precision),
            (", XLA", flag_values.jit_compile),
        )
        if on
    )


def git_revision():
    """Short hash of HEAD, with '+dirty' when tracked files other than BENCHMARKS.md (which
    the benchmarks themselves append to) have uncommitted changes."""

    def run(*args):
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()

    revision = run("rev-parse", "--short", "HEAD") or "unknown"
    changed = run(
        "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)BENCHMARKS.md"
    )
    return revision + ("+dirty" if changed else "")


def markdown_table(header, rows):
    """A GitHub-markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def emit(title, header, rows, notes=()):
    """Prints the table and appends it, with date, machine and revision, to BENCHMARKS.md."""
    stamp = "%s UTC; %s; revision %s" % (
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"),
        machine(),
        git_revision(),
    )
    block = "\n".join(
        ["### %s" % title, "", stamp, "", markdown_table(header, rows), ""]
        + ["%s" % n for n in notes]
        + [""]
    )
    print(block)
    new_file = not os.path.exists(BENCHMARKS_MD)
    with open(BENCHMARKS_MD, "a", encoding="utf-8") as f:
        if new_file:
            f.write(
                "# Benchmarks\n\nAppended by the scripts in `bench/` (`make bench`); "
                "each script's docstring says what it measures. Ratios come from one "
                "process, variants interleaved; absolute CPU times are only "
                "indicative.\n\n"
            )
        f.write(block + "\n")

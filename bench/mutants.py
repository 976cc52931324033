"""Mutation check of the test suite: `make test` must fail when one line of the
code is broken in any of ten places.

Each mutant of ``MUTANTS`` is a one-line change to the committed code, a realistic bug (a
dropped term, an off-by-one, a skipped escape, a wrong sign), in one of the ten places:
the summarizer's loss, the translator's loss, the captioner's loss, the beam search, the
checkpoint index rebuild, the signal handler, the decode manifest, the report's escaping
(report.html), the export's tokenizer and the ACVI KL term. With it go the test files that
guard that place.

For the unmutated control (once, with the tests of every mutant selected) and then for
each mutant, the script clones the committed revision (``--revision``, default HEAD) of
this checkout into a temporary folder, applies the one-line change there (its old line
must occur exactly once in the file, and the changed file must still compile), and runs
``.venv/bin/python -m pytest -x -q -p no:cacheprovider -n 2 <tests>`` in the clone, with
``PYTHONPATH`` set to the clone and one TensorFlow thread per pool, as `make test` runs
them. This checkout is never changed: the clone is removed after each run, even on an
error.

Which code the tests import: the venv holds this checkout as an editable install, whose
finder (``__editable___acvi_tf_*_finder.py``) setuptools appends to ``sys.meta_path``,
after the ``PathFinder`` that searches ``sys.path``. The clone's folder comes first on
``sys.path`` (``PYTHONPATH``, and the working folder of ``python -m pytest``), so its
packages shadow the editable install, and the commands the tests start inherit the
variable. Each clone checks this before its tests run: ``acvi_tf``, ``nmt``,
``pointer_generator``, ``video_caption`` and ``data_prep`` must be imported from the clone.

A mutant is ``caught`` when pytest reports failed tests and exits non-zero: status 1, or 2
where pytest-xdist ends the session as interrupted at the first failure (``-x``);
``survived`` when all its tests pass (status 0); an ``error`` otherwise (pytest did not
run the tests); a ``timeout`` after ``--timeout`` seconds. The control is ``passed`` or
``failed`` by the same rules. One JSON line per run (the control first, then each mutant)
is appended to ``bench/results/mutants.jsonl``: date, revision, name, path, line number,
the old and the new line, the tests run, status, the failed tests (pytest's
``FAILED``/``ERROR`` lines), pytest's summary and the seconds.

Usage (from the repository root; on 2 cores about 14 minutes for the control and all ten,
7 of them the control's, when nothing else runs):

    .venv/bin/python bench/mutants.py
    .venv/bin/python bench/mutants.py --only=nmt_loss,beam_search --revision=HEAD~1
"""

import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from acvi_tf import config as config_lib  # noqa: E402 (the project root goes on the path first)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
RECORDS = os.path.join(ROOT, "bench", "results", "mutants.jsonl")
PACKAGES = ("acvi_tf", "nmt", "pointer_generator", "video_caption", "data_prep")
PYTEST = ["-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-n", "2"]
# A test pytest reports as failed or in error: "FAILED tests/x.py::test_y[a b] - message"
FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+?::\S+?(?:\[.*?\])?)(?: - .*)?$")
# pytest's last line: "=== 1 failed, 12 passed in 34.56s (0:00:34) ===", or -q's bare form
SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed|error|skipped|deselected).*? in [\d.]+s.*?)=*$")


class Mutant(NamedTuple):
    """A one-line change of the code, and the tests that must catch it.

    Attributes:
      name: what ``--only`` selects it by.
      path: the file, relative to the repository root.
      old: the whole line as the code has it (indentation included), exactly once.
      new: the line that replaces it.
      tests: test files (or test ids) that guard the place, relative to the root.
    """

    name: str
    path: str
    old: str
    new: str
    tests: Tuple[str, ...]


MUTANTS: List[Mutant] = [
    # (1) The summarizer's loss: the coverage term dropped from See's total.
    Mutant(
        "summarizer_loss",
        "pointer_generator/losses.py",
        '    see_loss = losses["loss"] + cov_loss_wt * losses["coverage_loss"]',
        '    see_loss = losses["loss"]',
        ("tests/test_pg_model.py", "tests/test_loss_wiring.py"),
    ),
    # (2) The translator's loss: each sentence's last target step (its </s>) dropped.
    Mutant(
        "nmt_loss",
        "nmt/model.py",
        '            batch["tgt_len"],',
        '            batch["tgt_len"] - 1,',
        ("tests/test_nmt_model.py",),
    ),
    # (3) The captioner's loss: the same off-by-one, for its NLL, KL and attention penalty.
    Mutant(
        "captioner_loss",
        "video_caption/model.py",
        '        lengths = batch["caption_len"]',
        '        lengths = batch["caption_len"] - 1',
        ("tests/test_vc_model.py", "tests/test_loss_wiring.py", "tests/test_vc_learning.py"),
    ),
    # (4) The beam search: a finished hypothesis normalised by one token fewer than it has.
    Mutant(
        "beam_search",
        "acvi_tf/inference/beam_search.py",
        "        score = _normalize(stop_total, t + 1, normalization, settings.gnmt_alpha)",
        "        score = _normalize(stop_total, t, normalization, settings.gnmt_alpha)",
        ("tests/test_decoding.py", "tests/test_gnmt_beam_search.py"),
    ),
    # (5) The checkpoint index rebuild: the newest readable checkpoint left off the index.
    Mutant(
        "checkpoint_index_rebuild",
        "acvi_tf/training/checkpoints.py",
        "    return (own[: own.index(newest) + 1] if newest else own), newest",
        "    return (own[: own.index(newest)] if newest else own), newest",
        ("tests/test_checkpoint_index.py",),
    ),
    # (6) The signal handler: the test for an earlier signal inverted, so the first signal
    # ends the process at once (no save, no line) and a second one is taken as a first.
    Mutant(
        "signal_handler",
        "acvi_tf/process/stops.py",
        "        if self.signum is not None:",
        "        if self.signum is None:",
        ("tests/test_signals.py",),
    ),
    # (7) The decode manifest: each data file recorded by its size instead of its SHA-256.
    Mutant(
        "decode_manifest",
        "pointer_generator/decode.py",
        "    data = {os.path.abspath(p): files.sha256(p) for p in sorted(batcher.paths)}",
        "    data = {os.path.abspath(p): os.path.getsize(p) for p in sorted(batcher.paths)}",
        ("tests/test_pg_decode.py",),
    ),
    # (8) The report's escaping: "<" of the data no longer escaped in report.html's script
    # element, so a text holding "</script>" ends it.
    Mutant(
        "report_escaping",
        "acvi_tf/inference/report.py",
        r'    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))'
        r'.replace("<", "\\u003c")',
        '    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))',
        ("tests/test_report.py",),
    ),
    # (9) The export's tokenizer (tftext, traced into the exports): a period that ends the
    # text no longer split off ("ok." stays one token).
    Mutant(
        "export_tokenizer",
        "acvi_tf/text/graph_tokenizer.py",
        r'    (r"\.(%s|$)" % _SPACE, r" .\1"),',
        r'    (r"\.(%s)" % _SPACE, r" .\1"),',
        ("tests/test_graph_text.py", "tests/test_export.py"),
    ),
    # (10) The ACVI KL term: the sign of log sigma^2 in each component's KL to N(0, I).
    Mutant(
        "acvi_kl",
        "acvi_tf/contexts/acvi.py",
        "        tf.exp(log_variance) + tf.square(memory) - 1.0 - log_variance, axis=-1",
        "        tf.exp(log_variance) + tf.square(memory) - 1.0 + log_variance, axis=-1",
        ("tests/test_context.py", "tests/test_acvi_kl.py", "tests/test_acvi_elbo.py"),
    ),
]


class RunResult(NamedTuple):
    """One pytest run in a clone.

    Attributes:
      status: ``caught``/``survived`` (mutant), ``passed``/``failed`` (control), ``error``
        or ``timeout``.
      returncode: pytest's exit status (None after a timeout).
      failed: the ids of the tests pytest reported as failed or in error.
      summary: pytest's summary line ("" when none).
      seconds: the run's wall time.
      tail: the output's last lines, kept when the status is neither expected outcome.
    """

    status: str
    returncode: Optional[int]
    failed: List[str]
    summary: str
    seconds: float
    tail: str


def git(*args: str, cwd: str = ROOT) -> str:
    """Runs git in ``cwd`` and returns its standard output, stripped.

    Args:
      *args: git's arguments.
      cwd: the repository.

    Returns:
      The output.

    Raises:
      subprocess.CalledProcessError: git failed.
    """
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def clone(revision: str, parent: str) -> str:
    """A fresh copy of the committed ``revision`` of this checkout.

    Args:
      revision: a full commit id.
      parent: the temporary folder to make the copy in.

    Returns:
      The copy's folder (a git clone with ``revision`` checked out, detached).
    """
    folder = tempfile.mkdtemp(prefix="tree-", dir=parent)
    subprocess.run(
        ["git", "clone", "--quiet", "--no-checkout", ROOT, folder],
        check=True,
        capture_output=True,
        text=True,
    )
    git("checkout", "--quiet", "--detach", revision, cwd=folder)
    return folder


def test_environment(tree: str) -> Dict[str, str]:
    """The environment of the tests in ``tree``: its code first on ``sys.path``, one
    TensorFlow thread per pool (as `make test`), no bytecode written into the copy.

    Args:
      tree: the copy's folder.

    Returns:
      A copy of this process's environment with those variables set.
    """
    env = dict(os.environ)
    env.update(
        PYTHONPATH=tree,
        TF_NUM_INTRAOP_THREADS="1",
        TF_NUM_INTEROP_THREADS="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def check_imports(tree: str) -> Dict[str, str]:
    """Checks that the venv's Python, run as the tests are, imports the copy's packages
    and not the editable install's (this checkout).

    Args:
      tree: the copy's folder.

    Returns:
      Each package's ``__file__``.

    Raises:
      RuntimeError: a package comes from elsewhere.
    """
    code = (
        "import importlib, json; "
        "print(json.dumps({n: importlib.import_module(n).__file__ for n in %r}))"
    )
    done = subprocess.run(
        [PYTHON, "-c", code % (PACKAGES,)],
        cwd=tree,
        env=test_environment(tree),
        check=True,
        capture_output=True,
        text=True,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    prefix = os.path.realpath(tree) + os.sep
    elsewhere = {n: f for n, f in found.items() if not os.path.realpath(f).startswith(prefix)}
    if elsewhere:
        raise RuntimeError("imported from outside the copy %s: %s" % (tree, elsewhere))
    return found


def apply(tree: str, mutant: Mutant) -> int:
    """Replaces the mutant's old line by its new one in the copy.

    Args:
      tree: the copy's folder.
      mutant: the change.

    Returns:
      The changed line's number (from 1).

    Raises:
      ValueError: the old line does not occur exactly once, or the changed file does not
        compile.
    """
    path = os.path.join(tree, mutant.path)
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    where = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == mutant.old]
    if len(where) != 1:
        raise ValueError(
            "%s: the line %r occurs %d times, not once" % (mutant.path, mutant.old, len(where))
        )
    index = where[0]
    ending = lines[index][len(mutant.old) :]
    lines[index] = mutant.new + ending
    text = "".join(lines)
    compile(text, path, "exec")  # a mutant is a bug, not a syntax error
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return index + 1


def run_tests(tree: str, tests: Sequence[str], timeout: float, mutated: bool) -> RunResult:
    """Runs pytest on ``tests`` in the copy, as a process group that a timeout ends.

    Args:
      tree: the copy's folder.
      tests: test files or ids.
      timeout: seconds before the run is stopped.
      mutated: whether the copy holds a mutant (names the statuses).

    Returns:
      The run's result.
    """
    start = time.monotonic()
    process = subprocess.Popen(
        [PYTHON, *PYTEST, *tests],
        cwd=tree,
        env=test_environment(tree),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
        returncode: Optional[int] = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        returncode = None
    except BaseException:  # stopped (Ctrl-C, SIGTERM): its tests and their workers too
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    seconds = time.monotonic() - start
    lines = output.splitlines()
    failed = [m.group(1) for m in map(FAILED.match, lines) if m]
    summaries = [m.group(1).strip() for m in map(SUMMARY.match, lines) if m]
    if returncode is None:
        status = "timeout"
    elif returncode in (1, 2) and failed:
        status = "caught" if mutated else "failed"
    elif returncode == 0:
        status = "survived" if mutated else "passed"
    else:
        status = "error"
    expected = ("caught", "survived") if mutated else ("passed",)
    tail = "" if status in expected else "\n".join(lines[-40:])
    return RunResult(status, returncode, failed, summaries[-1] if summaries else "", seconds, tail)


def one_run(
    revision: str, parent: str, tests: Sequence[str], timeout: float, mutant: Optional[Mutant]
) -> Tuple[Optional[int], RunResult]:
    """Clones ``revision``, applies ``mutant`` (None: the control), checks what the tests
    import, runs them, and removes the clone.

    Args:
      revision: the full commit id.
      parent: the temporary folder of the clones.
      tests: test files or ids.
      timeout: seconds for pytest.
      mutant: the change, or None.

    Returns:
      The changed line's number (None for the control) and the run's result.
    """
    tree = clone(revision, parent)
    try:
        line = apply(tree, mutant) if mutant else None
        check_imports(tree)
        return line, run_tests(tree, tests, timeout, mutated=mutant is not None)
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def record(fields: Dict[str, object]) -> None:
    """Appends one JSON line to ``bench/results/mutants.jsonl``.

    Args:
      fields: the line's values.
    """
    os.makedirs(os.path.dirname(RECORDS), exist_ok=True)
    with open(RECORDS, "a", encoding="utf-8") as f:
        f.write(json.dumps(fields, ensure_ascii=False) + "\n")


def selected(names: Sequence[str]) -> List[Mutant]:
    """The mutants ``--only`` names (all when none).

    Args:
      names: mutant names.

    Returns:
      Those mutants, in ``MUTANTS``'s order.

    Raises:
      app.UsageError: a name is no mutant's.
    """
    if not names:
        return list(MUTANTS)
    unknown = sorted(set(names) - {m.name for m in MUTANTS})
    if unknown:
        raise app.UsageError(
            "--only: no mutant named %s; the mutants: %s"
            % (", ".join(unknown), ", ".join(m.name for m in MUTANTS))
        )
    return [m for m in MUTANTS if m.name in names]


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this script's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_list("only", [], "Mutant names to run (all: none given).", flag_values=fv)
    flags.DEFINE_string("revision", "HEAD", "The committed revision to mutate.", flag_values=fv)
    flags.DEFINE_float("timeout", 1800.0, "Seconds per pytest run.", flag_values=fv)


def run(args: config_lib.Config) -> int:
    """Runs the control and the selected mutants; prints one line each.

    Args:
      args: the flags (``define_flags``).

    Returns:
      0 when the control passed and every mutant was caught, else 1.
    """
    mutants = selected(args.only)
    # SIGTERM (and SIGINT, which a background job ignores) unwind through the clean-ups
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda signum, frame: sys.exit(128 + signum))
    commit = git("rev-parse", "--verify", args.revision + "^{commit}")
    revision = git("rev-parse", "--short", commit)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    all_tests = list(dict.fromkeys(t for m in mutants for t in m.tests))
    start = time.monotonic()
    parent = tempfile.mkdtemp(prefix="acvi-mutants-")
    everything_caught = True
    try:
        _, control = one_run(commit, parent, all_tests, args.timeout, None)
        record(
            dict(
                date=date,
                revision=revision,
                name="control",
                path=None,
                line=None,
                old=None,
                new=None,
                tests=all_tests,
                status=control.status,
                returncode=control.returncode,
                failed=control.failed,
                summary=control.summary,
                seconds=round(control.seconds, 1),
            )
        )
        print(
            "%-26s %-8s %6.0f s  %s%s"
            % (
                "control",
                control.status,
                control.seconds,
                control.summary,
                ("  failed: " + ", ".join(control.failed)) if control.failed else "",
            ),
            flush=True,
        )
        if control.tail:
            print(control.tail, flush=True)
        everything_caught = control.status == "passed"
        for mutant in mutants:
            line, result = one_run(commit, parent, mutant.tests, args.timeout, mutant)
            record(
                dict(
                    date=date,
                    revision=revision,
                    name=mutant.name,
                    path=mutant.path,
                    line=line,
                    old=mutant.old,
                    new=mutant.new,
                    tests=list(mutant.tests),
                    status=result.status,
                    returncode=result.returncode,
                    failed=result.failed,
                    summary=result.summary,
                    seconds=round(result.seconds, 1),
                    control=control.status,
                )
            )
            shown = ", ".join(result.failed) if result.failed else "none failed"
            print(
                "%-26s %-8s %6.0f s  %s:%s  %s"
                % (
                    mutant.name,
                    result.status.upper() if result.status == "survived" else result.status,
                    result.seconds,
                    mutant.path,
                    line,
                    shown,
                ),
                flush=True,
            )
            if result.tail:
                print(result.tail, flush=True)
            everything_caught &= result.status == "caught"
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    print("total: %.0f s (revision %s)" % (time.monotonic() - start, revision), flush=True)
    return 0 if everything_caught else 1


if __name__ == "__main__":
    config_lib.run_command(define_flags, run, exit_status=lambda status: status)

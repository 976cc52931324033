"""METEOR 1.5 with the jar that pycocoevalcap ships (Java needed; ``make test`` installs it).

Two modes, as See et al. and the ACVI paper report them: ``"exact"`` (``-m exact``: only
exact word matches) and ``"full"`` (the default modules: exact, stem, synonym and
paraphrase). Language ``en`` with ``-norm`` (lowercasing and punctuation normalisation),
as pycocoevalcap runs it. The score is METEOR's corpus-level score, computed by the jar
from the summed statistics of all segments; each hypothesis may have several references.
"""

import os
import shutil
import subprocess
from typing import List, Sequence, Tuple, Union

from acvi_tf import errors, progress

MODES = ("exact", "full")
# seconds of scoring before the first progress line
_DELAY = 10.0


class MeteorUnavailableError(errors.UserError, RuntimeError):
    """Java or the METEOR jar is missing; the message says what to install."""


def _jar_dir():
    try:
        import pycocoevalcap
    except ImportError as e:
        raise MeteorUnavailableError(
            "pycocoevalcap (which ships meteor-1.5.jar) is not installed; run `make test`"
        ) from e
    return os.path.join(list(pycocoevalcap.__path__)[0], "meteor")  # a namespace package


def _clean(text):
    return " ".join(text.replace("|||", " ").split())


def meteor(
    references: Sequence[Union[str, Sequence[str]]], hypotheses: Sequence[str], mode: str = "full"
) -> Tuple[float, List[float]]:
    """Corpus METEOR of ``hypotheses`` against ``references``.

    Args:
      references: one entry per hypothesis: a string or a list of reference strings.
      hypotheses: strings.
      mode: ``"exact"`` or ``"full"``.

    Returns:
      ``(score, per_segment_scores)``.

    Raises:
      MeteorUnavailableError: no ``java`` on the PATH.
    """
    if mode not in MODES:
        raise ValueError("mode must be one of %s, got %r" % (MODES, mode))
    if len(references) != len(hypotheses) or not hypotheses:
        raise ValueError(
            "got %d references for %d hypotheses; they must pair up and not be "
            "empty" % (len(references), len(hypotheses))
        )
    if shutil.which("java") is None:
        raise MeteorUnavailableError(
            "METEOR 1.5 needs Java; install it (Debian/Ubuntu: "
            "apt-get install default-jre-headless)"
        )
    command = [
        "java",
        "-Xmx2G",
        "-jar",
        "meteor-1.5.jar",
        "-",
        "-",
        "-stdio",
        "-l",
        "en",
        "-norm",
    ] + (["-m", "exact"] if mode == "exact" else [])
    lines = []
    for refs, hypothesis in zip(references, hypotheses):
        refs = [refs] if isinstance(refs, str) else list(refs)
        lines.append(" ||| ".join(["SCORE"] + [_clean(r) for r in refs] + [_clean(hypothesis)]))
    process = subprocess.Popen(
        command,
        cwd=_jar_dir(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stats, report = [], None
        for line in lines:  # each SCORE line answers with one line of statistics
            process.stdin.write(line + "\n")
            process.stdin.flush()
            stats.append(process.stdout.readline().strip())
            # timed from the first answer: before it, the jar loads its tables
            report = report or progress.Progress(len(lines), "scored segments", delay=_DELAY)
            report(len(stats))
        process.stdin.write(" ||| ".join(["EVAL"] + stats) + "\n")
        process.stdin.flush()
        segment_scores = [float(process.stdout.readline()) for _ in stats]
        score = float(process.stdout.readline())
    except (ValueError, BrokenPipeError) as e:
        process.kill()
        raise RuntimeError("METEOR 1.5 failed: %s" % process.stderr.read().strip()) from e
    finally:
        if process.stdin and not process.stdin.closed:
            process.stdin.close()
        process.wait(timeout=60)
    return score, segment_scores

"""METEOR 1.5 with the jar that pycocoevalcap ships (Java needed; ``make test`` installs it).

Two modes, as See et al. and the ACVI paper report them: ``"exact"`` (``-m exact``: only
exact word matches) and ``"full"`` (the default modules: exact, stem, synonym and
paraphrase). Language ``en`` with ``-norm`` (lowercasing and punctuation normalisation),
as pycocoevalcap runs it. The score is METEOR's corpus-level score, computed by the jar
from the summed statistics of all segments; each hypothesis may have several references.
"""

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
from typing import IO, Dict, List, Sequence, Tuple, Union

from acvi_tf import errors, progress

MODES = ("exact", "full")
# seconds of scoring before the first progress line
_DELAY = 10.0
# the running jar of each mode and the file of its stderr (``_jar``); the lock of their pipes
_JARS: Dict[str, Tuple[subprocess.Popen, IO[str]]] = {}
_LOCK = threading.Lock()


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
    lines = []
    for refs, hypothesis in zip(references, hypotheses):
        refs = [refs] if isinstance(refs, str) else list(refs)
        lines.append(" ||| ".join(["SCORE"] + [_clean(r) for r in refs] + [_clean(hypothesis)]))
    with _LOCK:
        process, log = _jar(mode)
        try:
            stats, report = [], None
            for line in lines:  # each SCORE line answers with one line of statistics
                process.stdin.write(line + "\n")
                process.stdin.flush()
                stats.append(process.stdout.readline().strip())
                # timed from the first answer: a new jar loads its tables before it
                report = report or progress.Progress(len(lines), "scored segments", delay=_DELAY)
                report(len(stats))
            process.stdin.write(" ||| ".join(["EVAL"] + stats) + "\n")
            process.stdin.flush()
            segment_scores = [float(process.stdout.readline()) for _ in stats]
            score = float(process.stdout.readline())
        except (ValueError, BrokenPipeError) as e:
            del _JARS[mode]
            process.kill()
            log.seek(0)
            message = log.read().strip()
            _end(process, log)
            raise RuntimeError("METEOR 1.5 failed: %s" % message) from e
    return score, segment_scores


def _jar(mode: str) -> Tuple[subprocess.Popen, IO[str]]:
    """The jar that scores ``mode`` in this process: started at its first scoring and
    kept for the later ones (a start costs about 0.3 s of CPU in exact mode and seconds
    of loading tables in full mode, once per validation otherwise), ended with the
    process. A jar that has exited (a Ctrl-C reaches the whole process group) is started
    again."""
    if mode in _JARS:
        if _JARS[mode][0].poll() is None:
            return _JARS[mode]
        _end(*_JARS.pop(mode))
    command = ["java", "-Xmx2G", "-jar", "meteor-1.5.jar", "-", "-", "-stdio", "-l", "en", "-norm"]
    command += ["-m", "exact"] if mode == "exact" else []
    log = tempfile.TemporaryFile("w+")  # not a pipe, which a long life could fill
    process = subprocess.Popen(
        command,
        cwd=_jar_dir(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    _JARS[mode] = process, log
    return _JARS[mode]


@atexit.register
def close() -> None:
    """Ends the jars this process started."""
    with _LOCK:
        while _JARS:
            _end(*_JARS.popitem()[1])


def _end(process: subprocess.Popen, log: IO[str]) -> None:
    """Ends a jar: it stops at the end of its input; closes its files."""
    try:
        process.stdin.close()
    except BrokenPipeError:
        pass
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    process.stdout.close()
    log.close()

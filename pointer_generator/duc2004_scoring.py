"""DUC 2004 task 1's scoring of a decode folder: ROUGE-1.5.5 recall at 75 bytes against
all references (``score_duc2004``), the scoring the command
``pointer_generator.duc2004_eval`` runs and its docstring describes.
"""

import json
import os
import re
import tempfile
from typing import Dict, List, Mapping

from acvi_tf import errors, progress
from acvi_tf.metrics import rouge as rouge_lib

ROUGE_ARGS = "-b 75"
RESULTS_FILE = "DUC2004_ROUGE_results.txt"
METRICS_FILE = "duc2004_metrics.json"
_DECODED_NAME = re.compile(r"^(\d{6,})_decoded\.txt$")
_MEASURES = (("rouge_1", "ROUGE-1"), ("rouge_2", "ROUGE-2"), ("rouge_l", "ROUGE-L"))


class Duc2004EvalError(errors.UserError, ValueError):
    """The decode folder or the references file is missing, malformed or mismatched."""


def _valid_entry(entry):
    if not isinstance(entry, dict) or not isinstance(entry.get("docid"), str):
        return False
    refs = entry.get("references")
    return (
        isinstance(refs, list)
        and bool(refs)
        and all(isinstance(r, str) and r.strip() for r in refs)
    )


def load_references(path: str) -> List[List[str]]:
    """Reads ``references.json`` of ``data_prep.duc2004``.

    Args:
      path: the file.

    Returns:
      A list, one entry per document, of its references (strings).

    Raises:
      Duc2004EvalError: the file is missing, not JSON, or an entry is not
        ``{"docid": str, "references": [non-empty str, ...]}``; the message names the
        entry.
    """
    try:
        with open(path, encoding="utf-8") as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        raise Duc2004EvalError("cannot read --references %s: %s" % (path, e)) from e
    if not isinstance(entries, list):
        raise Duc2004EvalError("%s must hold a JSON list (data_prep.duc2004 writes one)" % path)
    references = []
    for index, entry in enumerate(entries):
        if not _valid_entry(entry):
            raise Duc2004EvalError(
                '%s: entry %d is not {"docid": ..., "references": [non-empty strings]}'
                % (path, index)
            )
        references.append(entry["references"])
    return references


def read_decoded(decode_dir: str) -> List[str]:
    """Reads ``decode_dir/decoded/%06d_decoded.txt`` in index order.

    Args:
      decode_dir: a decode folder.

    Returns:
      A list of summaries, each one string: the file's lines joined by single spaces.

    Raises:
      Duc2004EvalError: ``decoded/`` is missing, or its indices are not 0, 1, ..., N-1.
    """
    decoded_dir = os.path.join(decode_dir, "decoded")
    try:
        names = os.listdir(decoded_dir)
    except OSError as e:
        raise Duc2004EvalError(
            "cannot list %s: %s; is --decode_dir a decode folder?" % (decoded_dir, e)
        ) from e
    indexed = []
    for name in names:
        match = _DECODED_NAME.match(name)
        if match:
            indexed.append((int(match.group(1)), name))
    indexed.sort()
    summaries = []
    for expected, (index, name) in enumerate(indexed):
        if index != expected:
            raise Duc2004EvalError(
                "%s has no %06d_decoded.txt (the files must be numbered "
                "from 000000 without gaps)" % (decoded_dir, expected)
            )
        with open(os.path.join(decoded_dir, name), encoding="utf-8") as f:
            summaries.append(" ".join(f.read().split()))
    return summaries


def _write_atomically(path, text):
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=os.path.dirname(path), delete=False, prefix=".partial-"
    ) as f:
        f.write(text)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(f.name, 0o666 & ~umask)  # NamedTemporaryFile makes it 0600
    os.replace(f.name, path)


def duc2004_report(metrics: Mapping[str, float]) -> str:
    """The text of ``DUC2004_ROUGE_results.txt``: recall with 95% confidence intervals."""
    lines = [
        "DUC 2004 task 1: ROUGE-1.5.5 recall, summaries truncated at 75 bytes (%s), "
        "%d documents, %d references"
        % (metrics["rouge_args"], metrics["num_summaries"], metrics["num_references"])
    ]
    for key, name in _MEASURES:
        lines.append(
            "%s recall: %.4f with confidence interval (%.4f, %.4f)"
            % (
                name,
                metrics[key + "_recall"],
                metrics[key + "_recall_cb"],
                metrics[key + "_recall_ce"],
            )
        )
    return "\n".join(lines) + "\n"


def score_duc2004(decode_dir: str, references_path: str) -> Dict[str, float]:
    """Scores a decode folder against the DUC 2004 references; writes and returns the scores.

    Args:
      decode_dir: the decode folder (with ``decoded/``).
      references_path: ``references.json`` of ``data_prep.duc2004``, in ``.bin`` order.

    Returns:
      A dict: ``rouge_{1,2,l}_recall`` and their 95% interval ends ``..._cb``, ``..._ce``;
      ``rouge_args``, ``num_summaries`` and ``num_references``.

    Raises:
      Duc2004EvalError: the inputs are missing or malformed, or the number of decoded
        summaries differs from the number of documents in ``references_path``.
      acvi_tf.metrics.rouge.RougeUnavailableError: ROUGE-1.5.5 cannot run here.
    """
    references = load_references(references_path)
    hypotheses = read_decoded(decode_dir)
    if len(hypotheses) != len(references):
        raise Duc2004EvalError(
            "%s holds %d decoded summaries but %s lists %d documents; decode the whole "
            "test.bin built with it (--single_pass)"
            % (
                os.path.join(decode_dir, "decoded"),
                len(hypotheses),
                references_path,
                len(references),
            )
        )
    # Each reference is a summary of one sentence; a bare list of strings would be read
    # by rouge_perl as one summary of several sentences.
    with progress.stage("Scoring %d summaries with ROUGE-1.5.5" % len(hypotheses)):
        scores = rouge_lib.rouge_perl(
            [[[r] for r in refs] for refs in references], hypotheses, rouge_args=ROUGE_ARGS
        )
    metrics = {
        key + "_recall" + end: scores[key + "_recall" + end]
        for key, _ in _MEASURES
        for end in ("", "_cb", "_ce")
    }
    metrics.update(
        rouge_args=ROUGE_ARGS,
        num_summaries=len(hypotheses),
        num_references=sum(len(refs) for refs in references),
    )
    _write_atomically(os.path.join(decode_dir, RESULTS_FILE), duc2004_report(metrics))
    _write_atomically(
        os.path.join(decode_dir, METRICS_FILE), json.dumps(metrics, indent=2, sort_keys=True) + "\n"
    )
    return metrics

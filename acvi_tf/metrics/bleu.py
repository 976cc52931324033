"""Corpus BLEU-4 on tokenized text: tensorflow/nmt's ``scripts/bleu.py`` through sacrebleu.

tensorflow/nmt scores translations with its own ``compute_bleu`` (max order 4, no
smoothing, result x 100), which agrees with ``multi-bleu.perl``: n-gram counts on the
tokens as they are (no detokenization, no lowercasing), each hypothesis n-gram clipped
by its largest count in any reference, the geometric mean 0 as soon as one precision is
0, and the brevity penalty ``exp(1 - r / c)`` when the total hypothesis length c is
below the total reference length r.

The n-gram statistics come from sacrebleu (``tokenize='none'``, ``smooth_method='none'``);
the reference length r is then chosen by ``ref_length``:

* ``"shortest"`` (default, tensorflow/nmt): the sum of each sentence's shortest reference;
* ``"closest"`` (multi-bleu.perl, sacrebleu, NLTK): the reference closest in length to the
  hypothesis, the shorter one on ties.

With one reference per sentence, the case of the paper's corpora, both give the same r.

``sentence_statistics`` gives each sentence's statistics (lengths, clipped matches and
n-gram counts) and ``bleu_of_statistics`` the BLEU of their sums: ``corpus_bleu`` is the
BLEU of all of them, a bootstrap resample's BLEU that of its rows.

Tokens are split on any whitespace (sacrebleu, multi-bleu.perl). tensorflow/nmt splits
the stripped line on single spaces, which only differs for runs of spaces, other
whitespace characters and empty lines (an empty line is one empty token there).
"""

from typing import Iterable, Sequence, Union

import numpy as np
from sacrebleu.metrics import BLEU

REF_LENGTH_RULES = ("shortest", "closest")
_MAX_ORDER = 4


def _reference_lists(references):
    """Each entry as a non-empty list of reference strings."""
    lists = []
    for index, entry in enumerate(references):
        refs = [entry] if isinstance(entry, str) else list(entry)
        if not refs:
            raise ValueError("sentence %d has no reference" % index)
        lists.append(refs)
    return lists


def sentence_statistics(
    references: Sequence[Union[str, Sequence[str]]],
    hypotheses: Iterable[str],
    ref_length: str = "shortest",
) -> np.ndarray:
    """BLEU's sufficient statistics of each sentence, as sacrebleu counts them.

    Args:
      references: one entry per hypothesis: a reference string, or a list of them.
      hypotheses: the translations, tokens separated by spaces (BPE already removed).
      ref_length: ``"shortest"`` (tensorflow/nmt) or ``"closest"`` (multi-bleu.perl);
        see the module docstring.

    Returns:
      ``[N, 10]`` integers, one row per sentence: the hypothesis length, the reference
      length, the clipped n-gram matches for n = 1..4, the hypothesis n-grams for n = 1..4.

    Raises:
      ValueError: empty corpus, count mismatch, a sentence without references, or an
        unknown ``ref_length``.
    """
    if ref_length not in REF_LENGTH_RULES:
        raise ValueError("ref_length must be one of %s, got %r" % (REF_LENGTH_RULES, ref_length))
    hypotheses = list(hypotheses)
    ref_lists = _reference_lists(references)
    if not hypotheses:
        raise ValueError("no hypotheses to score")
    if len(ref_lists) != len(hypotheses):
        raise ValueError(
            "%d hypotheses but %d references; give one reference entry per "
            "hypothesis" % (len(hypotheses), len(ref_lists))
        )
    most = max(len(refs) for refs in ref_lists)
    streams = [[refs[k] if k < len(refs) else None for refs in ref_lists] for k in range(most)]
    # sacrebleu's own significance tests read the statistics through this method
    rows = np.array(_metric()._extract_corpus_statistics(hypotheses, streams), dtype=np.int64)
    if ref_length == "shortest":
        rows[:, 1] = [min(len(ref.split()) for ref in refs) for refs in ref_lists]
    return rows


def bleu_of_statistics(rows: np.ndarray, sentence: bool = False) -> float:
    """BLEU-4 of the summed statistics of ``sentence_statistics``' rows, in [0, 100].

    Args:
      rows: ``[N, 10]`` rows (the corpus, or a resample of it) or one ``[10]`` row.
      sentence: sentence BLEU as sacrebleu's ``sentence_bleu`` computes it (exponential
        smoothing, only the n-gram orders the sentence has); False: corpus BLEU, no
        smoothing.

    Returns:
      The BLEU score as a float.
    """
    sums = np.asarray(rows).reshape(-1, 2 + 2 * _MAX_ORDER).sum(axis=0)
    return float(
        BLEU.compute_bleu(
            correct=[int(c) for c in sums[2 : 2 + _MAX_ORDER]],
            total=[int(t) for t in sums[2 + _MAX_ORDER :]],
            sys_len=int(sums[0]),
            ref_len=int(sums[1]),
            smooth_method="exp" if sentence else "none",
            effective_order=sentence,
            max_ngram_order=_MAX_ORDER,
        ).score
    )


# What ``sentence_bleu`` is, for a report's label.
SENTENCE_BLEU = (
    "sentence BLEU from sacrebleu's statistics (exponential smoothing, the tokens as given)"
)


def sentence_bleu(reference: str, hypothesis: str) -> float:
    """One tokenized sentence's BLEU-4 in [0, 100] (``SENTENCE_BLEU``), as sacrebleu's
    ``sentence_bleu`` computes it; 0 for an empty hypothesis."""
    return bleu_of_statistics(sentence_statistics([reference], [hypothesis])[0], sentence=True)


def corpus_bleu(
    references: Sequence[Union[str, Sequence[str]]],
    hypotheses: Iterable[str],
    ref_length: str = "shortest",
) -> float:
    """Tokenized corpus BLEU-4 without smoothing, in [0, 100].

    Args:
      references: one entry per hypothesis: a reference string, or a list of them.
      hypotheses: the translations, tokens separated by spaces (BPE already removed).
      ref_length: ``"shortest"`` (tensorflow/nmt) or ``"closest"`` (multi-bleu.perl);
        see the module docstring.

    Returns:
      The BLEU score as a float.

    Raises:
      ValueError: empty corpus, count mismatch, a sentence without references, or an
        unknown ``ref_length``.
    """
    return bleu_of_statistics(sentence_statistics(references, hypotheses, ref_length))


def _metric():
    return BLEU(
        tokenize="none",
        smooth_method="none",
        lowercase=False,
        force=True,
        max_ngram_order=_MAX_ORDER,
    )

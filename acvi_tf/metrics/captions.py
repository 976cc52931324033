"""Caption metrics as coco-caption computes them: BLEU-1..4, METEOR 1.5, ROUGE-L, CIDEr-D.

The recipe of every MSVD paper (arctic-capgen-vid's ``cocoeval.py``): the raw references
and the generated captions both go through Stanford's PTBTokenizer (the CoreNLP 3.4.1 jar
shipped by ``pycocoevalcap``: lowercased, PTB punctuation tokens removed), then
``pycocoevalcap``'s ``Bleu(4)`` (corpus BLEU with the closest reference length),
``Rouge()`` (ROUGE-L F with beta 1.2, best reference, averaged over clips) and ``Cider()``
(really CIDEr-D: clipped counts, Gaussian length penalty with sigma 6, x10, document
frequencies from the evaluated references). METEOR 1.5 runs through
``acvi_tf.metrics.meteor`` with pycocoevalcap's settings (``-l en -norm``, statistics summed
over the corpus): the same jar and protocol as pycocoevalcap's ``Meteor`` but with the Java
process closed after each evaluation (pycocoevalcap's leaks until garbage collection).
Java is needed (``make test`` installs it).
"""

import shutil
from typing import Any, Dict, List, Mapping, Sequence

from acvi_tf import progress, quiet
from acvi_tf.metrics import meteor as meteor_lib

METRIC_NAMES = ("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr")


def ptb_tokenize(captions: Mapping[Any, Sequence[str]]) -> Dict[Any, List[str]]:
    """PTB-tokenises ``{id: [caption, ...]}`` with pycocoevalcap's tokenizer (Java).

    Returns:
      ``{id: [tokenized caption, ...]}`` in the same order, lowercased, punctuation removed.
    """
    if shutil.which("java") is None:
        raise meteor_lib.MeteorUnavailableError(
            "the PTBTokenizer jar needs Java; install it (Debian/Ubuntu: apt-get install "
            "default-jre-headless)"
        )
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    # the jar's stderr reaches the terminal but for its line of statistics
    with quiet.stderr_filtered(lambda line: line.startswith("PTBTokenizer tokenized ")):
        return PTBTokenizer().tokenize(
            {key: [{"caption": c} for c in values] for key, values in captions.items()}
        )


def _ptb_tokenize_both(gts, res):
    """``ptb_tokenize`` of the references ``gts`` and the captions ``res`` in one run of
    the jar (it tokenises each line on its own, so the tokens are those of two runs)."""
    both = ptb_tokenize(
        {**{(0, k): v for k, v in gts.items()}, **{(1, k): v for k, v in res.items()}}
    )
    return {k: both[(0, k)] for k in gts}, {k: both[(1, k)] for k in res}


def caption_metrics(
    references: Mapping[Any, Sequence[str]],
    hypotheses: Mapping[Any, str],
    tokenize: bool = True,
    names: Sequence[str] = METRIC_NAMES,
) -> Dict[str, float]:
    """Corpus caption metrics of one generated caption per clip.

    Args:
      references: ``{clip: [raw reference caption, ...]}``.
      hypotheses: ``{clip: generated caption}``; the same keys as ``references``.
      tokenize: PTB-tokenise both sides first (coco-caption does; False only for text
        that is already tokenized).
      names: the metrics wanted, from ``METRIC_NAMES`` (METEOR is the slow one: its Java
        process loads the paraphrase tables).

    Returns:
      ``{name: score}`` for every name in ``names``, as fractions (0..1 for all but
      CIDEr, which coco-caption scales by 10).

    Raises:
      ValueError: the key sets differ, a clip has no reference, or there is nothing to score.
    """
    unknown = set(names) - set(METRIC_NAMES)
    if unknown:
        raise ValueError("unknown metrics %s; choose from %s" % (sorted(unknown), METRIC_NAMES))
    gts, res = _checked(references, hypotheses)
    with progress.stage("Scoring %d captions with %s" % (len(gts), ", ".join(names))):
        return _scores(gts, res, tokenize, names)


def cider_per_caption(
    references: Mapping[Any, Sequence[str]], hypotheses: Mapping[Any, str], tokenize: bool = True
) -> Dict[Any, float]:
    """CIDEr-D of each clip's caption as ``caption_metrics`` computes the corpus CIDEr-D:
    document frequencies from the references of all the clips given, x10; the corpus
    score is the mean of these.

    Args:
      references: ``{clip: [raw reference caption, ...]}``.
      hypotheses: ``{clip: generated caption}``; the same keys as ``references``.
      tokenize: PTB-tokenise both sides first.

    Returns:
      ``{clip: CIDEr-D}``.

    Raises:
      ValueError: as ``caption_metrics``.
    """
    from pycocoevalcap.cider.cider import Cider

    gts, res = _checked(references, hypotheses)
    if tokenize:
        gts, res = _ptb_tokenize_both(gts, res)
    keys = list(gts)
    _, scores = Cider().compute_score({k: gts[k] for k in keys}, {k: res[k] for k in keys})
    return {key: float(score) for key, score in zip(keys, scores)}


def _checked(references, hypotheses):
    """``(gts, res)``: pycocoevalcap's dicts of the clips in sorted order, after checking
    that ``references`` and ``hypotheses`` pair up."""
    if set(references) != set(hypotheses):
        missing = sorted(set(references) ^ set(hypotheses), key=str)[:5]
        raise ValueError(
            "references and hypotheses must cover the same clips; these are "
            "in only one of them: %s" % missing
        )
    if not hypotheses:
        raise ValueError("no captions to score")
    empty = [key for key, refs in references.items() if not refs]
    if empty:
        raise ValueError("clips without references: %s" % sorted(empty, key=str)[:5])
    keys = sorted(references, key=str)
    # the tokenizer's line-based protocol needs a token on every line; an empty caption
    # scores zero either way
    gts = {k: list(references[k]) for k in keys}
    res = {k: [hypotheses[k] if hypotheses[k].strip() else "."] for k in keys}
    return gts, res


def _scores(gts, res, tokenize, names):
    """``caption_metrics``' scores of the checked references ``gts`` and captions ``res``."""
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    keys = sorted(gts, key=str)
    if tokenize:
        gts, res = _ptb_tokenize_both(gts, res)
    scores = {}
    if any(name.startswith("Bleu") for name in names):
        bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
        scores.update(("Bleu_%d" % (n + 1), float(b)) for n, b in enumerate(bleu))
    if "METEOR" in names:
        scores["METEOR"], _ = meteor_lib.meteor([gts[k] for k in keys], [res[k][0] for k in keys])
    if "ROUGE_L" in names:
        scores["ROUGE_L"] = float(Rouge().compute_score(gts, res)[0])
    if "CIDEr" in names:
        scores["CIDEr"] = float(Cider().compute_score(gts, res)[0])
    return {name: scores[name] for name in names}

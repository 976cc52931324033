"""coco-caption metrics: hand-checked BLEU and ROUGE-L, CIDEr-D against its definition,
and the PTB tokenisation of both sides. (METEOR 1.5 is checked against pycocoevalcap's
wrapper in test_metrics.py; its Java start-up is too slow to repeat here.)"""

import collections
import math
import subprocess

import numpy as np
import pytest

from acvi_tf.metrics import captions


def _ngrams(words, n):
    return collections.Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def _cider_d(references, hypotheses):
    """CIDEr-D from its definition, the mean over the clips."""
    return float(np.mean(_cider_d_each(references, hypotheses)))


def _cider_d_each(references, hypotheses, sigma=6.0):
    """CIDEr-D of each clip, in sorted order, from its definition (Vedantam et al. 2015;
    coco-caption's variant)."""
    keys = sorted(references)
    refs = {k: [r.split() for r in references[k]] for k in keys}
    hyps = {k: hypotheses[k].split() for k in keys}
    log_docs = math.log(len(keys))
    scores = []
    for k in keys:
        per_n = []
        for n in range(1, 5):
            df = collections.Counter(
                g for key in keys for g in set().union(*[_ngrams(r, n) for r in refs[key]])
            )

            def vector(words):
                counts = _ngrams(words, n)
                return {g: c * (log_docs - math.log(max(1.0, df[g]))) for g, c in counts.items()}

            h = vector(hyps[k])
            norm_h = math.sqrt(sum(v * v for v in h.values()))
            total = 0.0
            for ref in refs[k]:
                r = vector(ref)
                norm_r = math.sqrt(sum(v * v for v in r.values()))
                dot = sum(min(h[g], r[g]) * r[g] for g in h if g in r)  # clipped
                if norm_h and norm_r:
                    dot /= norm_h * norm_r
                else:
                    dot = 0.0
                delta = len(hyps[k]) - len(ref)
                total += dot * math.exp(-(delta**2) / (2 * sigma**2))
            per_n.append(total / len(refs[k]))
        scores.append(np.mean(per_n) * 10.0)
    return scores


REFERENCES = {
    "clip1": ["a man is playing a guitar", "a person plays the guitar", "a man plays music"],
    "clip2": ["a cat is eating food", "the cat eats", "a kitten is eating"],
    "clip3": ["a woman is slicing an onion", "someone cuts an onion", "a woman cuts food"],
}
HYPOTHESES = {
    "clip1": "a man is playing a guitar",
    "clip2": "a dog is eating",
    "clip3": "a woman is cutting an onion",
}


def test_bleu_and_rouge_l_by_hand():
    refs = {"x": ["the cat sat on a mat"]}
    scores = captions.caption_metrics(
        refs, {"x": "the cat sat on the mat"}, tokenize=False, names=("Bleu_4", "ROUGE_L")
    )
    assert set(scores) == {"Bleu_4", "ROUGE_L"}
    # precisions 5/6, 3/5, 2/4, 1/3; equal lengths so no brevity penalty
    assert scores["Bleu_4"] == pytest.approx((5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25, abs=1e-6)
    # LCS "the cat sat on mat" = 5 of 6 both ways; F with beta 1.2
    p = r = 5 / 6
    beta = 1.2
    assert scores["ROUGE_L"] == pytest.approx((1 + beta**2) * p * r / (r + beta**2 * p))


def test_cider_d_matches_its_definition():
    scores = captions.caption_metrics(REFERENCES, HYPOTHESES, tokenize=False, names=("CIDEr",))
    assert scores["CIDEr"] == pytest.approx(_cider_d(REFERENCES, HYPOTHESES), rel=1e-6)
    perfect = {k: v[0] for k, v in REFERENCES.items()}
    assert captions.caption_metrics(REFERENCES, perfect, tokenize=False, names=("CIDEr",))[
        "CIDEr"
    ] == pytest.approx(_cider_d(REFERENCES, perfect), rel=1e-6)


def test_raw_text_is_ptb_tokenized_on_both_sides(capfd, absl_caplog, monkeypatch):
    raw_refs = {k: [r.capitalize() + "." for r in v] for k, v in REFERENCES.items()}
    raw_hyps = {k: v.upper() + " ." for k, v in HYPOTHESES.items()}
    fast = ("Bleu_4", "ROUGE_L", "CIDEr")  # METEOR normalises on its own (-norm)
    launched, popen = [], subprocess.Popen
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: launched.append(a) or popen(*a, **k))
    assert captions.caption_metrics(raw_refs, raw_hyps, names=fast) == pytest.approx(
        captions.caption_metrics(REFERENCES, HYPOTHESES, tokenize=False, names=fast)
    )
    assert len(launched) == 1  # both sides in one start of Java
    assert "PTBTokenizer" not in capfd.readouterr().err  # the jar's statistics line
    start = "Scoring %d captions with Bleu_4, ROUGE_L, CIDEr" % len(HYPOTHESES)
    lines = [r.getMessage() for r in absl_caplog.records]
    assert lines[0] == start and lines[1].startswith(start + ": done in ")


def test_mismatched_clips_are_an_error():
    with pytest.raises(ValueError, match="clip3"):
        captions.caption_metrics(REFERENCES, {"clip1": "a", "clip2": "b"})


def test_cider_d_per_caption_averages_to_the_corpus_score():
    each = captions.cider_per_caption(REFERENCES, HYPOTHESES, tokenize=False)
    expected = _cider_d_each(REFERENCES, HYPOTHESES)
    assert [each[clip] for clip in sorted(REFERENCES)] == pytest.approx(expected)
    assert len(set(expected)) == 3
    # the document frequencies are the whole set's: one clip scored alone gets 0
    alone = captions.cider_per_caption(
        {"clip2": REFERENCES["clip2"]}, {"clip2": HYPOTHESES["clip2"]}, tokenize=False
    )
    assert alone["clip2"] == 0.0 < each["clip2"] < each["clip1"]

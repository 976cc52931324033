"""Corpus BLEU against NLTK's unsmoothed corpus BLEU and tensorflow/nmt's rules."""

import math

import pytest
import sacrebleu
from nltk.translate import bleu_score as nltk_bleu

from acvi_tf.formats import bpe
from acvi_tf.metrics import bleu

REFERENCES = [
    "the cat sat on the mat today",
    "there is a dog in the big garden",
    "he reads the news every morning",
]
HYPOTHESES = [
    "the cat sat on a mat today",
    "a dog is in the big garden",
    "he reads the news each morning",
]


def nltk_score(references, hypotheses):
    """NLTK corpus BLEU-4 (no smoothing, closest reference length) x 100."""
    refs = [[r.split()] if isinstance(r, str) else [x.split() for x in r] for r in references]
    return 100 * nltk_bleu.corpus_bleu(refs, [h.split() for h in hypotheses])


def test_matches_nltk_on_full_length_hypotheses():
    expected = nltk_score(REFERENCES, HYPOTHESES)
    assert 0 < expected < 100
    assert bleu.corpus_bleu(REFERENCES, HYPOTHESES) == pytest.approx(expected, abs=1e-6)


def test_brevity_penalty_matches_nltk():
    hypotheses = ["the cat sat on the mat", "there is a dog in the", "he reads the news"]
    expected = nltk_score(REFERENCES, hypotheses)
    assert bleu.corpus_bleu(REFERENCES, hypotheses) == pytest.approx(expected, abs=1e-6)
    # Every n-gram matches, so the score is the brevity penalty alone: c = 16, r = 21.
    assert expected == pytest.approx(100 * math.exp(1 - 21 / 16), abs=1e-6)


def test_zero_four_gram_precision_gives_zero():
    references = ["a b c d e", "f g h i"]
    hypotheses = ["a b c x e", "f g x i"]  # bigrams and trigrams match, no 4-gram does
    with pytest.warns(UserWarning, match="0 counts of 4-gram overlaps"):
        expected = nltk_score(references, hypotheses)  # a tiny number, not exactly 0
    assert expected == pytest.approx(0.0, abs=1e-6)
    assert bleu.corpus_bleu(references, hypotheses) == 0.0


def test_sentences_shorter_than_four_tokens_give_zero():
    # tensorflow/nmt: no 4-gram in the corpus makes the 4-gram precision 0.
    assert bleu.corpus_bleu(["the cat ."], ["the cat ."]) == 0.0


def test_identical_corpus_scores_100():
    assert bleu.corpus_bleu(REFERENCES, REFERENCES) == pytest.approx(100.0, abs=1e-9)


def test_bpe_markers_removed_before_scoring():
    bpe_hypotheses = [
        "the c@@ at sat on a m@@ at today",
        "a dog is in the big gar@@ den",
        "he reads the news each mor@@ n@@ ing",
    ]
    cleaned = [bpe.remove_bpe(h) for h in bpe_hypotheses]
    assert cleaned == HYPOTHESES
    expected = nltk_score(REFERENCES, HYPOTHESES)
    assert bleu.corpus_bleu(REFERENCES, cleaned) == pytest.approx(expected, abs=1e-6)
    assert bleu.corpus_bleu(REFERENCES, bpe_hypotheses) < expected


def test_multiple_references_length_rules():
    references = [
        ["the cat sat on the mat", "a cat was sitting on the mat today"],
        "there is a dog in the garden",
    ]
    hypotheses = ["the cat was sitting on the mat", "there is a dog in the garden"]
    # The first hypothesis has 7 tokens, its references 6 and 8: the tie goes to the
    # shorter, so both rules give r = 6 + 7 = 13 against c = 14.
    closest = bleu.corpus_bleu(references, hypotheses, ref_length="closest")
    assert closest == pytest.approx(nltk_score(references, hypotheses), abs=1e-6)
    assert bleu.corpus_bleu(references, hypotheses) == pytest.approx(closest, abs=1e-9)


def test_shortest_reference_rule_penalises_where_closest_does_not():
    references = [["a b c d", "a b c d e f g h"]]
    hypotheses = ["a b c d e f g"]
    # c = 7; shortest r = 4 gives no penalty; closest r = 8 gives exp(1 - 8/7).
    shortest = bleu.corpus_bleu(references, hypotheses)
    closest = bleu.corpus_bleu(references, hypotheses, ref_length="closest")
    assert closest == pytest.approx(nltk_score(references, hypotheses), abs=1e-6)
    assert closest == pytest.approx(shortest * math.exp(1 - 8 / 7), abs=1e-6)
    assert shortest == pytest.approx(100.0, abs=1e-9)


def test_no_lowercasing_or_retokenization():
    reference = ["The cat sat on the mat ."]
    assert bleu.corpus_bleu(reference, ["The cat sat on the mat ."]) == pytest.approx(100.0)
    lowered = bleu.corpus_bleu(reference, ["the cat sat on the mat ."])
    assert lowered == pytest.approx(nltk_score(reference, ["the cat sat on the mat ."]), abs=1e-6)
    assert lowered < 100.0
    assert bleu.corpus_bleu(reference, ["The cat sat on the mat."]) < lowered


def test_argument_errors():
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        bleu.corpus_bleu(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="no hypotheses"):
        bleu.corpus_bleu([], [])
    with pytest.raises(ValueError, match="sentence 0 has no reference"):
        bleu.corpus_bleu([[]], ["a"])
    with pytest.raises(ValueError, match="ref_length"):
        bleu.corpus_bleu(["a"], ["a"], ref_length="average")


def test_sentence_statistics_count_each_sentence():
    rows = bleu.sentence_statistics([["a b c d e", "a b"], "x y"], ["a b c a", "x z"])
    # lengths (the shortest reference), clipped matches for n = 1..4, n-grams for n = 1..4
    assert rows.tolist() == [[4, 2, 3, 2, 1, 0, 4, 3, 2, 1], [2, 2, 1, 0, 0, 0, 2, 1, 0, 0]]
    closest = bleu.sentence_statistics([["a b c d e", "a b"]], ["a b c a"], ref_length="closest")
    assert closest[0, 1] == 5
    assert bleu.bleu_of_statistics(rows[1], sentence=True) == pytest.approx(
        sacrebleu.sentence_bleu("x z", ["x y"], tokenize="none").score
    )
    assert bleu.bleu_of_statistics(rows[0]) == 0.0

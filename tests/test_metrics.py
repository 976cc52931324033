"""METEOR 1.5 (against pycocoevalcap's own wrapper) and the copying measures."""

import pytest

from acvi_tf.metrics import copying, meteor

pytestmark = pytest.mark.full_meteor  # against pycocoevalcap (conftest.py)

REFERENCES = [
    "the cat sat on the mat",
    ["police killed the gunman", "the gunman was shot by police"],
    "a red square moves left",
]
HYPOTHESES = [
    "the cats were sitting on the mat",
    "police kill the gunman",
    "a red square moves left",
]


@pytest.fixture(scope="module")
def scores():
    """One run of the jar per mode (each start loads METEOR's tables: seconds)."""
    return {mode: meteor.meteor(REFERENCES, HYPOTHESES, mode) for mode in meteor.MODES}


def test_full_meteor_equals_pycocoevalcap(scores):
    from pycocoevalcap.meteor.meteor import Meteor

    ours, segments = scores["full"]
    theirs, their_segments = Meteor().compute_score(
        {i: [r] if isinstance(r, str) else r for i, r in enumerate(REFERENCES)},
        {i: [h] for i, h in enumerate(HYPOTHESES)},
    )
    assert ours == pytest.approx(theirs, abs=1e-9)
    assert segments == pytest.approx(their_segments, abs=1e-9)


def test_exact_mode_ignores_stems_and_synonyms(scores):
    exact, exact_segments = scores["exact"]
    full, full_segments = scores["full"]
    assert 0.0 < exact < full < 1.0
    assert exact_segments[0] < full_segments[0]  # "cats"/"sitting" match only by stem
    assert exact_segments[2] > 0.9  # identical sentences
    with pytest.raises(ValueError, match="mode"):
        meteor.meteor(REFERENCES, HYPOTHESES, "stem")


def test_one_jar_scores_every_call_of_a_process_as_a_new_one_would(scores, monkeypatch):
    """Each mode's jar starts once in a process and scores each later call afresh: the
    same scores as a new jar's, whatever it scored before; a jar that has exited (a
    Ctrl-C reaches the process group) is started again."""
    started = []
    popen = meteor.subprocess.Popen

    def counted(*args, **kwargs):
        started.append(popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(meteor.subprocess, "Popen", counted)
    meteor.close()  # the module fixture's jars
    other = meteor.meteor(["a blue circle"], ["a blue circle moves"], "exact")
    again = meteor.meteor(REFERENCES, HYPOTHESES, "exact")
    assert again == scores["exact"] and other[0] != again[0]
    assert len(started) == 1
    started[0].kill()
    started[0].wait()
    assert meteor.meteor(REFERENCES, HYPOTHESES, "exact") == scores["exact"]
    assert len(started) == 2 and started[0].stdin.closed  # the exited jar's files are closed
    meteor.close()
    assert started[1].wait(timeout=0) == 0  # ended at the end of its input
    meteor.meteor(REFERENCES, HYPOTHESES, "exact")
    assert len(started) == 3


def test_novel_word_rate():
    articles = ["the cat sat on the mat .", "dogs bark loudly"]
    summaries = ["the cat sat .", "cats bark"]
    # novel: none in the first (all 4 tokens occur), "cats" in the second: 1 / 6
    assert copying.novel_word_rate(articles, summaries) == pytest.approx(1 / 6)
    assert copying.novel_word_rate(["a"], [""]) == 0.0


def test_oov_adoption_rate():
    vocab = {"the", "cat", "sat", "on", "mat", "."}
    articles = ["the zorblax sat on the quux", "the cat sat"]
    summaries = ["zorblax sat on quux .", "the cat"]
    references = ["the zorblax sat .", "the cat sat"]
    rate = copying.oov_adoption_rate(articles, summaries, references, vocab.__contains__)
    assert rate == pytest.approx(2.0)  # 2 article OOVs generated, 1 in the references
    assert copying.oov_adoption_rate(["a"], ["a"], ["b"], vocab.__contains__) is None


def test_lead_sentences():
    article = "first one . second ! third ? fourth part"
    assert copying.lead_sentences(article, 2) == ["first one .", "second !"]
    assert copying.lead_sentences(article, 9) == [
        "first one .",
        "second !",
        "third ?",
        "fourth part",
    ]


def test_an_undefined_rate_is_a_dash_in_the_results_table():
    from pointer_generator import results_table

    lines = results_table.table([("ACVI", {"oov_adoption_rate": None, "novel_word_rate": 0.5})])
    rows = {line[:18].strip(): line[18:].strip() for line in lines.splitlines()[1:]}
    assert rows["OOV adoption rate"] == "-" and rows["novel-word rate"] == "0.500"

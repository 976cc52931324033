"""acvi_tf.inference.compare on hand-made decodes: summaries in the decode folders'
layout, translation files, captions; the page's order, the JSON against direct
computations, and the refusal of two different test sets."""

import json
import re

import browser
import doc_commands
import numpy as np
import pytest
import sacrebleu

from acvi_tf import config as config_lib
from acvi_tf.inference import compare
from acvi_tf.metrics import bleu, bootstrap, captions, rouge

REFERENCES = [
    ["police killed the gunman .", "the city was calm ."],
    ["the cat sat on the mat ."],
    ["stocks fell sharply on monday ."],
    ["a storm hit the coast ."],
]
SUMMARIES_A = [["the gunman was killed ."], ["a dog ran ."], ["stocks fell on monday ."]]
SUMMARIES_A.append(["a storm hit the coast ."])
SUMMARIES_B = [["police killed the gunman ."], ["the cat sat on a mat ."], ["markets went up ."]]
SUMMARIES_B.append(["a storm hit the coast ."])


def write_decode(folder, references, summaries):
    """A decode folder as the summarizer and See et al.'s code write it."""
    for kind, texts in (("reference", references), ("decoded", summaries)):
        (folder / kind).mkdir(parents=True)
        for i, sentences in enumerate(texts):
            path = folder / kind / ("%06d_%s.txt" % (i, kind))
            path.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    return str(folder)


def run(*argv):
    config = config_lib.parse(compare.define_flags, ["compare", "--samples=200", *argv])
    return compare.run(config)


def rows(page):
    """``(id, class)`` of the page's example rows, in page order."""
    return re.findall(r"<tr class='example (\w+)' data-id='(\w+)'", page)


def test_summaries_ranked_by_difference_and_scored_by_rouge_155(tmp_path):
    a = write_decode(tmp_path / "a", REFERENCES, SUMMARIES_A)
    b = write_decode(tmp_path / "b", REFERENCES, SUMMARIES_B)
    record = run("--a=" + a, "--b=" + b, "--out=%s" % (tmp_path / "out"))
    saved = json.loads((tmp_path / "out" / compare.JSON_FILE).read_text())
    assert saved == json.loads(json.dumps(record))
    assert record["task"] == "summarizer" and record["scorer"] == "ROUGE-1.5.5"
    assert all(e["source"] is None for e in record["per_example"])
    flat = [" ".join(s) for s in SUMMARIES_A]
    for i in range(2):  # each summary's score is ROUGE-1.5.5's of that summary alone
        alone = rouge.rouge_perl(REFERENCES[i : i + 1], flat[i : i + 1])
        ours = record["per_example"][i]["scores_a"]["rouge_1_f_score"]
        assert ours == pytest.approx(alone["rouge_1_f_score"], abs=1e-5)
    for kind in ("rouge_1_f_score", "rouge_2_f_score", "rouge_l_f_score"):
        a_scores = np.array([e["scores_a"][kind] for e in record["per_example"]])
        b_scores = np.array([e["scores_b"][kind] for e in record["per_example"]])
        expected = bootstrap.paired_bootstrap(a_scores, b_scores, samples=200)
        corpus = next(row for row in record["corpus"] if row["key"] == kind)
        assert corpus == dict(metric=corpus["metric"], key=kind, **expected._asdict())
    page = (tmp_path / "out" / compare.HTML_FILE).read_text()
    # example 2 is B's largest loss, 1 its largest win; 0 and 3 tie on ROUGE-1
    assert rows(page) == [("loss", "000002"), ("win", "000001"), ("tie", "000000")] + [
        ("tie", "000003")
    ]
    assert "http" not in page and "<script" not in page
    assert "markets went up ." in page and "police killed the gunman .\nthe city" in page
    assert "B wins on 1, loses on 1 and ties on 2 of the 4 examples." in page
    assert "<th>source</th>" not in page  # summaries have none


def test_text_is_escaped_once_and_the_page_holds_the_largest(tmp_path):
    a = write_decode(tmp_path / "a", [["growth > 5 % ."], ["x y z ."]], [["growth"], ["x y z ."]])
    b = write_decode(
        tmp_path / "b", [["growth > 5 % ."], ["x y z ."]], [["growth 5 %"], ["x y z ."]]
    )
    record = run("--a=" + a, "--b=" + b, "--out=%s" % (tmp_path / "out"), "--html_examples=1")
    assert record["per_example"][0]["reference"] == ["growth > 5 % ."]
    page = (tmp_path / "out" / compare.HTML_FILE).read_text()
    assert [i for _, i in rows(page)] == ["000000"]
    assert "growth &gt; 5 % ." in page  # the text ">", escaped once


def test_two_test_sets_are_refused_naming_both_and_the_first_difference(tmp_path):
    a = write_decode(tmp_path / "a", REFERENCES, SUMMARIES_A)
    changed = REFERENCES[:2] + [["stocks rose on monday ."]] + REFERENCES[3:]
    b = write_decode(tmp_path / "b", changed, SUMMARIES_B)
    with pytest.raises(compare.CompareError, match="%s and %s do not hold" % (a, b)) as refused:
        run("--a=" + a, "--b=" + b, "--out=%s" % (tmp_path / "out"))
    assert "example 000002" in str(refused.value)
    short = write_decode(tmp_path / "short", REFERENCES[:3], SUMMARIES_B[:3])
    with pytest.raises(compare.CompareError, match="%s holds 4 examples, %s 3" % (a, short)):
        run("--a=" + a, "--b=" + short, "--out=%s" % (tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_an_interrupted_decode_is_refused_unless_partial_comparisons_are_allowed(tmp_path):
    a = write_decode(tmp_path / "a", REFERENCES, SUMMARIES_A)
    (tmp_path / "a" / "manifest.json").write_text("{}")
    (tmp_path / "a" / "metrics.json").write_text("{}")  # finished
    b = write_decode(tmp_path / "b", REFERENCES[:3], SUMMARIES_B[:3])
    (tmp_path / "b" / "manifest.json").write_text("{}")  # interrupted after 3 of 4
    with pytest.raises(compare.CompareError) as refused:
        run("--a=" + a, "--b=" + b, "--out=%s" % (tmp_path / "out"))
    assert str(refused.value) == (
        "%s is an interrupted decode (3 summaries, no metrics.json); finish it (its decode "
        "command resumes), or give --allow_partial to compare the examples both decodes "
        "hold" % b
    )
    record = run("--a=" + a, "--b=" + b, "--out=%s" % (tmp_path / "out"), "--allow_partial")
    assert [e["id"] for e in record["per_example"]] == ["000000", "000001", "000002"]


NMT_REFERENCES = ["the cat sat on the mat today", "there is a dog in the big garden"]
NMT_REFERENCES.append("he reads the news every morning")
NMT_A = ["the cat sat on a mat today", "a dog is in the big garden", "he reads news"]
NMT_B = ["the cat sat on the mat today", "a dog is in a garden", "he reads the news each day"]


def test_translations_bootstrap_corpus_bleu_and_rank_sentence_bleu(tmp_path):
    paths = {}
    for name, lines in (("ref", NMT_REFERENCES), ("src", ["s1", "s2", "s3"]), ("a", NMT_A)):
        paths[name] = tmp_path / name
        paths[name].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    (tmp_path / "b").write_text("".join(line + "\n" for line in NMT_B), encoding="utf-8")
    argv = ["--reference=%s" % paths["ref"], "--source=%s" % paths["src"]]
    record = run("--a=%s" % paths["a"], "--b=%s" % (tmp_path / "b"), *argv, "--out=%s" % tmp_path)
    (corpus,) = record["corpus"]
    assert corpus["a"] == pytest.approx(bleu.corpus_bleu(NMT_REFERENCES, NMT_A))
    assert corpus["b"] == pytest.approx(bleu.corpus_bleu(NMT_REFERENCES, NMT_B))
    stats = [bleu.sentence_statistics(NMT_REFERENCES, x) for x in (NMT_A, NMT_B)]
    expected = bootstrap.paired_bootstrap(*stats, bleu.bleu_of_statistics, samples=200)
    assert corpus == dict(metric="BLEU", key="bleu", **expected._asdict())
    differences = []
    for example, reference, a, b in zip(record["per_example"], NMT_REFERENCES, NMT_A, NMT_B):
        scores = [sacrebleu.sentence_bleu(x, [reference], tokenize="none").score for x in (a, b)]
        assert [example["scores_a"]["sentence_bleu"], example["scores_b"]["sentence_bleu"]] == (
            pytest.approx(scores)
        )
        differences.append(scores[1] - scores[0])
    page = (tmp_path / compare.HTML_FILE).read_text()
    assert [int(i) for _, i in rows(page)] == list(np.argsort(-np.abs(differences)))
    assert len(set(np.abs(differences))) == 3
    assert [e["source"] for e in record["per_example"]] == ["s1", "s2", "s3"]
    assert "<th>source</th>" in page and "<td class='text'>s2</td>" in page


def test_bpe_pieces_beside_words_are_refused_unless_bpe_is_removed(tmp_path):
    paths = {}
    pieces = ["the c@@ at sat on the mat today", "a d@@ og is in a garden", "he reads"]
    for name, lines in (("ref", NMT_REFERENCES), ("a", NMT_A), ("b", pieces)):
        paths[name] = tmp_path / name
        paths[name].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    argv = ["--a=%s" % paths["a"], "--b=%s" % paths["b"], "--reference=%s" % paths["ref"]]
    with pytest.raises(compare.CompareError) as refused:
        run(*argv, "--out=%s" % (tmp_path / "out"))
    assert str(refused.value) == (
        "%s holds BPE pieces (@@) and the other files words, so their n-grams would not "
        "match; give --bpe to compare words" % paths["b"]
    )
    record = run(*argv, "--bpe", "--out=%s" % (tmp_path / "out"))
    assert record["per_example"][0]["b"] == "the cat sat on the mat today"


CLIP_REFERENCES = {
    "clip1": ["a man is playing a guitar", "a person plays the guitar"],
    "clip2": ["a cat is eating food", "the cat eats"],
    "clip3": ["a woman is slicing an onion", "someone cuts an onion"],
}
CAPTIONS = {
    "a": {"clip1": "a man plays", "clip2": "a dog is eating", "clip3": ""},
    "b": {"clip1": "a man is playing a guitar", "clip2": "a cat", "clip3": "a woman cuts"},
}


def write_captions(split, folder_a, folder_b):
    """The split's records at ``split``, the captioner's decodes in the two folders."""
    split.parent.mkdir(parents=True, exist_ok=True)
    split.write_text(
        "".join(json.dumps(dict(clip=c, references=r)) + "\n" for c, r in CLIP_REFERENCES.items())
    )
    for folder, captions_of in ((folder_a, CAPTIONS["a"]), (folder_b, CAPTIONS["b"])):
        folder.mkdir(parents=True)
        (folder / "captions.json").write_text(json.dumps(captions_of))


def test_captions_by_cider_d_with_the_test_sets_frequencies(tmp_path):
    write_captions(tmp_path / "test.jsonl", tmp_path / "a", tmp_path / "b")
    record = run(
        "--a=%s" % (tmp_path / "a"),
        "--b=%s" % (tmp_path / "b"),
        "--reference=%s" % (tmp_path / "test.jsonl"),
        "--out=%s" % (tmp_path / "out"),
    )
    expected = captions.caption_metrics(CLIP_REFERENCES, CAPTIONS["b"], names=("CIDEr",))
    assert record["corpus"][0]["b"] == pytest.approx(expected["CIDEr"])
    assert [(e["id"], e["source"]) for e in record["per_example"]] == [
        ("clip1", "clip1"),
        ("clip2", "clip2"),
        ("clip3", "clip3"),
    ]
    assert record["per_example"][2]["scores_a"]["cider_d"] == 0.0  # an empty caption


def test_decodes_of_different_kinds_are_refused(tmp_path):
    a = write_decode(tmp_path / "a", REFERENCES, SUMMARIES_A)
    (tmp_path / "b.txt").write_text("x\n")
    with pytest.raises(compare.CompareError, match="is a summarizer decode folder but"):
        run("--a=" + a, "--b=%s" % (tmp_path / "b.txt"), "--out=%s" % (tmp_path / "out"))


def write_lines(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_the_pages_commands_compare_each_kind_of_decode(tmp_path):
    """docs/compare.md's commands, on decodes made at the paths they name."""
    summaries, translations, captioned = doc_commands.block("docs/compare.md", 0)
    write_decode(tmp_path / summaries.flag("a"), REFERENCES, SUMMARIES_A)
    write_decode(tmp_path / summaries.flag("b"), REFERENCES, SUMMARIES_B)
    for flag, lines in (("a", NMT_A), ("b", NMT_B), ("reference", NMT_REFERENCES)):
        write_lines(tmp_path / translations.flag(flag), lines)
    write_lines(tmp_path / translations.flag("source"), ["s1", "s2", "s3"])
    write_captions(*(tmp_path / captioned.flag(f) for f in ("reference", "a", "b")))
    for command, task in (
        (summaries, "summarizer"),
        (translations, "nmt"),
        (captioned, "captioner"),
    ):
        record = doc_commands.run_in_process(command.text, str(tmp_path))
        assert record["task"] == task and record["examples"] in (3, 4)
        assert (tmp_path / command.flag("out") / compare.HTML_FILE).is_file()


def test_the_page_in_chromium_lists_the_largest_differences_first_and_requests_nothing(
    tmp_path,
):
    a = write_decode(tmp_path / "a", REFERENCES, SUMMARIES_A)
    b = write_decode(tmp_path / "b", REFERENCES, SUMMARIES_B)
    record = run("--a=" + a, "--b=" + b, "--out=%s" % (tmp_path / "out"))
    page = tmp_path / "out" / compare.HTML_FILE
    net_log = tmp_path / "net.json"
    dom = browser.run_chromium(tmp_path, page.as_uri(), "--log-net-log=%s" % net_log, "--dump-dom")
    shown = [
        float(d)
        for d in re.findall(r'<tr class="example \w+" data-id="\d+" data-difference="([^"]+)"', dom)
    ]
    expected = [e["difference"]["rouge_1_f_score"] for e in record["per_example"]]
    assert shown == sorted(expected, key=lambda d: -abs(d))
    assert browser.page_requests(net_log) == []
    png = browser.screenshot(str(page), tmp_path)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10000

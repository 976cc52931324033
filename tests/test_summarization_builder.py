"""data_prep.summarization: your own pairs (JSON lines, TSV, CSV, two aligned files) into
See's finished_files, that the summarizer trains on; bad input in one line."""

import json
import os
import subprocess
import sys
from unittest import mock

import pytest
from absl import flags, logging

from acvi_tf import config as config_lib
from acvi_tf import files
from acvi_tf.formats import see_vocab
from acvi_tf.formats.bin_files import read_bin_file
from acvi_tf.text import tokenizers
from data_prep import splits, summarization
from pointer_generator import run_summarization

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RECORDS = [
    dict(
        id="a1",
        article="The cat sat on the mat. It was happy.",
        abstract="A cat sat.",
        split="train",
    ),
    dict(
        id="a2",
        article="Dogs run in the park every day.",
        abstract="Dogs run.\nThey like parks.",
        split="train",
    ),
    dict(
        id="a3",
        article="The cat sat on the mat. It was happy.",
        abstract="Same article.",
        split="test",
    ),
    dict(
        id="a4",
        article="Rain fell in Rome, 3.5 mm in an hour.",
        abstract="Rain in Rome.",
        split="val",
    ),
    dict(id="a5", article="Il gatto dorme sul divano.", abstract="Gatto dorme.", split="test"),
]

# an empty article, a duplicate in a later batch, a long article, Unicode, punctuation
TRICKY_RECORDS = [
    dict(article="Don't stop: it's 10:30, ok.", abstract="It's 10:30.\n“Quoted” — end…"),
    dict(article="", abstract="Nothing."),
    dict(article="Straße ﬁne ０１２ 東京は晴れ。 👍🏽", abstract="Ok."),
    dict(article="Don't stop: it's 10:30, ok.", abstract="A duplicate."),
    dict(article="One two three four five six seven eight nine ten eleven.", abstract="Long."),
    dict(article="  Rain fell in Rome, 3.5 mm.", abstract="Rain.\n\n In Rome. "),
]


def _build(tmp_path, *argv):
    """Builds with ``argv``; these few pairs may leave val and test empty, and a test may
    build again into the same folder."""
    out = tmp_path / "out"
    argv = ["x", "--out_dir=%s" % out, "--allow_empty=val,test", "--overwrite", *argv]
    config = config_lib.parse(summarization.define_flags, argv)
    return summarization.build(config), out


def _split(out, split):
    path = out / "chunked" / ("%s_000.bin" % split)
    return list(read_bin_file(str(path))) if path.exists() else []


def test_json_lines_with_their_own_splits(tmp_path):
    path = tmp_path / "pairs.jsonl"  # with a byte order mark, as Windows tools write it
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS) + "\n", encoding="utf-8-sig")
    stats, out = _build(tmp_path, "--input=%s" % path, "--id_field=id", "--split_field=split")
    assert stats.duplicates_dropped == 1 and stats.pairs == dict(train=2, val=1, test=1)
    by_article = dict(_split(out, "train"))
    assert by_article["dogs run in the park every day ."] == (
        "<s> dogs run . </s> <s> they like parks . </s>"
    )
    assert _split(out, "test") == [("il gatto dorme sul divano .", "<s> gatto dorme . </s>")]
    assert json.loads((out / "corpus.json").read_text()) == dict(
        tokenizer="treebank", lowercase=True
    )
    assert "cat" in see_vocab.read_words(str(out / "vocab"))
    assert "rome" not in see_vocab.read_words(str(out / "vocab"))  # val words stay out


def test_tsv_csv_and_aligned_files_give_the_same_pairs(tmp_path):
    rows = [(r["article"], r["abstract"].replace("\n", " ")) for r in RECORDS]
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("text\tsummary\n" + "".join("%s\t%s\n" % r for r in rows), encoding="utf-8")
    csv_path = tmp_path / "pairs.csv"  # as Excel exports it: a byte order mark first
    csv_path.write_text(
        "summary,text\n" + "".join('"%s","%s"\n' % (s, a) for a, s in rows), encoding="utf-8-sig"
    )
    articles, abstracts = tmp_path / "articles.txt", tmp_path / "abstracts.txt"
    articles.write_text("".join(a + "\n" for a, _ in rows), encoding="utf-8")
    abstracts.write_text("".join(s + "\n" for _, s in rows), encoding="utf-8")
    fields = ["--article_field=text", "--abstract_field=summary"]
    outputs = []
    for name, argv in (
        ("tsv", ["--input=%s" % tsv, *fields]),
        ("csv", ["--input=%s" % csv_path, *fields]),
        ("lines", ["--input=%s" % articles, "--abstract_input=%s" % abstracts]),
    ):
        stats, out = _build(tmp_path / name, *argv)
        assert stats.records_read == 5 and stats.duplicates_dropped == 1
        outputs.append([_split(out, split) for split in summarization.SPLITS])
    assert outputs[0] == outputs[1] == outputs[2]


def test_a_csv_cell_may_hold_the_abstract_s_lines(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text('article,abstract\n"One. Two.","First line.\nSecond line."\n')
    _, out = _build(tmp_path, "--input=%s" % path, "--train_input=%s" % path)
    [(article, abstract)] = _split(out, "train")[:1]
    assert abstract == "<s> first line . </s> <s> second line . </s>"


def test_ptb_tokenizer_and_case(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(dict(article='He said "Hi." It\'s 3.5%.', abstract="Hi.")) + "\n")
    _, out = _build(tmp_path, "--train_input=%s" % path, "--tokenizer=ptb", "--nolowercase")
    assert _split(out, "train") == [("He said `` Hi . '' It 's 3.5 % .", "<s> Hi . </s>")]
    assert json.loads((out / "corpus.json").read_text())["tokenizer"] == "ptb"


@pytest.mark.parametrize(
    "name, content, argv, message",
    [
        ("p.tsv", "article\tabstract\na\tb\tc\n", [], r"p.tsv:2: 3 cells, but the header has 2"),
        (
            "p.tsv",
            "text\tabstract\na\tb\n",
            [],
            r"p.tsv:2: no field 'article' \(the record has 'text'",
        ),
        (
            "p.jsonl",
            '{"article": "a", "abstract": ""}\n',
            [],
            r"p.jsonl:1: empty abstract; .*--skip_empty",
        ),
        ("p.jsonl", '{"article": "a"\n', [], r"p.jsonl:1: not a JSON object"),
        (
            "p.jsonl",
            '{"article": 3, "abstract": "b"}\n',
            [],
            r"p.jsonl:1: field 'article' is a int",
        ),
        (
            "p.jsonl",
            b'{"article": "caf\xe9", "abstract": "b"}\n',
            [],
            r"p.jsonl:1: byte 17 .*not UTF-8",
        ),
        (
            "p.jsonl",
            '{"article": "a", "abstract": "b", "s": "dev"}\n',
            ["--split_field=s"],
            r"p.jsonl:1: split 'dev'",
        ),
        ("p.txt", "a\n", [], r"cannot tell the format of .*p.txt.*--format="),
    ],
)
def test_bad_input_is_one_line_naming_the_file_and_line(tmp_path, name, content, argv, message):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(summarization.PairsError, match=message):
        _build(tmp_path, "--input=%s" % path, *argv)


def test_skip_empty_counts_instead_and_aligned_files_must_align(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"article": "", "abstract": "b"}\n{"article": "a", "abstract": "b"}\n')
    stats, _ = _build(tmp_path, "--input=%s" % path, "--skip_empty")
    assert (stats.empty_articles_skipped, sum(stats.pairs.values())) == (1, 1)
    (tmp_path / "a.txt").write_text("x\ny\n")
    (tmp_path / "b.txt").write_text("x\n")
    with pytest.raises(summarization.PairsError, match="a.txt has 2 lines but .*b.txt has 1"):
        _build(
            tmp_path,
            "--input=%s" % (tmp_path / "a.txt"),
            "--abstract_input=%s" % (tmp_path / "b.txt"),
        )


def test_the_command_reports_a_bad_file_in_one_line(tmp_path):
    path = tmp_path / "p.tsv"
    path.write_text("article\tabstract\nonly one cell\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "data_prep.summarization",
            "--input=%s" % path,
            "--out_dir=%s" % tmp_path,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: %s:2: 1 cells" % path)


def test_the_summarizer_trains_on_a_built_corpus(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                dict(
                    article="story %d : %s" % (i, RECORDS[i % 5]["article"]),
                    abstract="summary %d ." % i,
                )
            )
            + "\n"
            for i in range(40)
        )
    )
    _, out = _build(tmp_path, "--input=%s" % path)
    argv = [
        "run_summarization",
        "--data_path=%s" % (out / "chunked" / "train_*"),
        "--vocab_path=%s" % (out / "vocab"),
        "--log_root=%s" % (tmp_path / "logs"),
        "--exp_name=own",
        "--hidden_dim=8",
        "--emb_dim=4",
        "--batch_size=4",
        "--max_steps=2",
        "--vocab_size=0",
    ]
    run_summarization.run(config_lib.parse(run_summarization.define_flags, argv))
    assert os.path.exists(tmp_path / "logs" / "own" / "train" / "checkpoint")


def test_tftext_tokenises_a_batch_of_records_per_call_as_one_at_a_time(monkeypatch):
    monkeypatch.setattr(splits, "TOKENIZE_BATCH", 2)
    calls, batched = [], tokenizers.batch_tokenizer("tftext")
    tokenize = lambda texts: calls.append(len(texts)) or batched(texts)  # noqa: E731
    sources = [
        summarization.Source(r["article"], r["abstract"], str(i), "p:%d" % i)
        for i, r in enumerate(TRICKY_RECORDS)
    ]
    stats = summarization.Stats()
    pairs = summarization.make_pairs(sources, tokenize, 10, stats, skip_empty=True)
    one = tokenizers.tokenizer("tftext")
    expected = []
    for i in (0, 2, 5):
        sentences = [s.strip() for s in TRICKY_RECORDS[i]["abstract"].split("\n") if s.strip()]
        abstract = " ".join("<s> %s </s>" % one(sentence) for sentence in sentences)
        expected.append((str(i), one(TRICKY_RECORDS[i]["article"].strip()), abstract))
    assert [(p.key, p.article, p.abstract) for p in pairs] == expected
    assert calls == [3, 2, 5]  # an article and its abstract's sentences per kept record
    dropped = (stats.empty_articles_skipped, stats.duplicates_dropped, stats.too_long_dropped)
    assert dropped == (1, 1, 1)


def _info_lines(monkeypatch):
    lines = []
    monkeypatch.setattr(logging, "info", lambda fmt, *args: lines.append(fmt % args))
    return lines


def test_a_build_logs_its_progress(tmp_path, monkeypatch):
    monkeypatch.setattr(splits, "TOKENIZE_BATCH", 2)
    lines = _info_lines(monkeypatch)
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    _build(tmp_path, "--input=%s" % path, "--split_field=split", "--tokenizer=tftext")
    # the first line and the last of each stage; the others are at least 10 s apart
    assert [line.split(",")[0] for line in lines] == [
        "tokenised 2/5 records",
        "tokenised 5/5 records",
        "wrote 1/4 records",
        "wrote 4/4 records",
    ]
    assert lines[1].endswith("/s, ETA 0s")


@pytest.mark.parametrize(
    "name, content, holds",
    [
        ("p.jsonl", "", "one JSON object line"),
        ("p.jsonl", "\n  \n", "one JSON object line"),
        ("p.tsv", "article\tabstract\n", "one row under its header"),
        ("p.csv", "article,abstract\n\n", "one row under its header"),
    ],
)
def test_an_input_of_no_pair_is_named(tmp_path, name, content, holds):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(splits.EmptySplitError) as refused:
        _build(tmp_path, "--input=%s" % path)
    assert str(refused.value) == "%s holds no pair (not %s); give a file with pairs in it" % (
        path,
        holds,
    )
    (tmp_path / "a.txt").write_text("")
    (tmp_path / "b.txt").write_text("")
    with pytest.raises(splits.EmptySplitError, match=r"a.txt holds no pair \(not one line\)"):
        _build(
            tmp_path,
            "--input=%s" % (tmp_path / "a.txt"),
            "--abstract_input=%s" % (tmp_path / "b.txt"),
        )
    # a split's own file may be empty where --allow_empty names the split
    full = tmp_path / "full.jsonl"
    full.write_text(json.dumps(RECORDS[0]) + "\n", encoding="utf-8")
    given = ["--train_input=%s" % full, "--test_input=%s" % path]
    with pytest.raises(splits.EmptySplitError, match="or add --allow_empty=test$"):
        summarization.build(
            config_lib.parse(
                summarization.define_flags, ["x", "--out_dir=%s" % (tmp_path / "o"), *given]
            )
        )
    stats, _ = _build(tmp_path, *given)
    assert stats.pairs == dict(train=1, val=0, test=0)


def test_a_corpus_is_replaced_only_with_overwrite(tmp_path, monkeypatch):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(RECORDS[0]) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    argv = ["x", "--input=%s" % path, "--out_dir=%s" % out, "--allow_empty=val,test"]
    summarization.build(config_lib.parse(summarization.define_flags, argv))
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(splits.CorpusExistsError) as refused:
        summarization.build(config_lib.parse(summarization.define_flags, argv + ["--lowercase"]))
    assert str(refused.value) == (
        "%s holds a corpus already (%s); give another --out_dir, or --overwrite to replace it"
        % (out, out / "corpus.json")
    )
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    overwrite = config_lib.parse(summarization.define_flags, argv + ["--lowercase", "--overwrite"])
    # nor may a build replace the folder while another build writes it
    held = files.lock_beside(str(out), "corpus build")
    with pytest.raises(files.FolderInUseError, match="being written by another corpus build"):
        summarization.build(overwrite)
    held.close()
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    # a rebuild cut short leaves a folder no longer taken for a finished corpus
    with monkeypatch.context() as patch:
        patch.setattr(summarization, "write_corpus", mock.Mock(side_effect=KeyboardInterrupt))
        with pytest.raises(KeyboardInterrupt):
            summarization.build(overwrite)
    assert not (out / "corpus.json").exists()
    (out / ".partial-x1y2").write_bytes(b"a write a kill cut short")
    summarization.build(overwrite)
    assert not (out / ".partial-x1y2").exists()
    assert json.loads((out / "corpus.json").read_text())["lowercase"] is True


def test_a_split_left_empty_stops_the_build_unless_allowed(tmp_path):
    """A build that would write no pair to a split writes nothing and names the split;
    --allow_empty or a cap of 0 says the user means it."""
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(RECORDS[0]) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    argv = ["x", "--train_input=%s" % path, "--out_dir=%s" % out]
    with pytest.raises(splits.EmptySplitError) as refused:
        summarization.build(config_lib.parse(summarization.define_flags, argv))
    assert str(refused.value) == (
        "the build would write 0 pairs to val and test (train 1, val 0, test 0); give it "
        "input that fills the split, or add --allow_empty=val,test to leave it empty on purpose"
    )
    assert not out.exists()
    with pytest.raises(splits.EmptySplitError, match="0 pairs to test .* --allow_empty=val,test "):
        summarization.build(
            config_lib.parse(summarization.define_flags, argv + ["--allow_empty=val"])
        )
    stats = summarization.build(
        config_lib.parse(summarization.define_flags, argv + ["--allow_empty=val", "--max_test=0"])
    )
    assert stats.pairs == dict(train=1, val=0, test=0) and (out / "vocab").exists()
    with pytest.raises(flags.IllegalFlagValueError, match="--allow_empty takes split names"):
        config_lib.parse(summarization.define_flags, argv + ["--allow_empty=dev"])


def test_the_summary_writes_medians_alike():
    stats = summarization.Stats(
        median_article_tokens=dict(train=43.0, val=43.5), median_abstract_tokens=dict(train=46)
    )
    lines = stats.summary().splitlines()
    assert "median tokens: article 43, abstract 46" in lines[5]
    assert "median tokens: article 43.5, abstract -" in lines[6]
    assert "median tokens: article -, abstract -" in lines[7]

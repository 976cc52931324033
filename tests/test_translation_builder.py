"""data_prep.translation: your own parallel text (one TSV, aligned files, pre-split or
not) for any language pair into tensorflow/nmt's files, with optional joint BPE; bad
input in one line; NMT trains on the result."""

import json
import os

import pytest
from absl import logging

from acvi_tf import config as config_lib
from acvi_tf import files
from acvi_tf.formats import nmt_text
from acvi_tf.text import tokenizers
from data_prep import splits, translation
from nmt import run_nmt

PAIRS = [
    ("The cat sleeps.", "Il gatto dorme."),
    ("The dog runs in the park.", "Il cane corre nel parco."),
    ("Rome is big.", "Roma è grande."),
    ("The cat sleeps.", "Il gatto dorme."),  # a duplicate
    ("Birds sing at dawn.", "Gli uccelli cantano all'alba."),
]


def _build(tmp_path, *argv):
    """Builds with ``argv``; these few pairs may leave dev and test empty, and a test may
    build again into the same folder."""
    out = tmp_path / "out"
    common = ["x", "--src=en", "--tgt=it", "--out_dir=%s" % out, "--allow_empty=dev,test"]
    config = config_lib.parse(translation.define_flags, [*common, "--overwrite", *argv])
    return translation.build(config), out


def _read(out, name):
    return (out / name).read_text(encoding="utf-8").splitlines()


def test_one_tsv_and_aligned_files_give_the_same_corpus(tmp_path):
    tsv = tmp_path / "pairs.tsv"
    # with a byte order mark before the header, as Excel writes it
    tsv.write_text("it\ten\n" + "".join("%s\t%s\n" % (it, en) for en, it in PAIRS), "utf-8-sig")
    (tmp_path / "all.en").write_text("".join(en + "\n" for en, _ in PAIRS), "utf-8")
    (tmp_path / "all.it").write_text("".join(it + "\n" for _, it in PAIRS), "utf-8")
    stats, out_tsv = _build(tmp_path / "a", "--input=%s" % tsv)
    _, out_lines = _build(tmp_path / "b", "--input_prefix=%s" % (tmp_path / "all"))
    assert stats.duplicates_dropped == 1 and sum(stats.pairs.values()) == 4
    for name in ("train.en", "train.it", "dev.en", "test.it", "vocab.en", "vocab.it"):
        assert _read(out_tsv, name) == _read(out_lines, name)
    assert "il gatto dorme ." in _read(out_tsv, "train.it") + _read(out_tsv, "test.it")
    assert _read(out_tsv, "vocab.it")[:3] == list(nmt_text.SPECIALS)
    assert not os.path.exists(out_tsv / "bpe")  # --bpe_merges=0 by default
    assert "bpe:" not in stats.summary()  # nor a line about it
    record = json.loads((out_tsv / "corpus.json").read_text())
    assert record == dict(src="en", tgt="it", tokenizer="treebank", lowercase=True, bpe=False)


def test_pre_split_files_keep_their_split_and_bpe_is_joint(tmp_path):
    for split, rows in (("train", PAIRS[:3] * 4), ("dev", PAIRS[3:4]), ("test", PAIRS[4:])):
        (tmp_path / ("%s.en" % split)).write_text("".join(r[0] + "\n" for r in rows), "utf-8")
        (tmp_path / ("%s.it" % split)).write_text("".join(r[1] + "\n" for r in rows), "utf-8")
    argv = ["--%s_prefix=%s" % (s, tmp_path / s) for s in translation.SPLITS]
    stats, out = _build(tmp_path, *argv, "--bpe_merges=10", "--nolowercase", "--min_count=1")
    assert stats.pairs == dict(train=3, dev=0, test=1)  # dev's pair is train's: kept once
    assert _read(out, "test.en") == ["Birds sing at dawn ."]
    assert 0 < stats.bpe_merges <= 10  # fewer when no pair of units occurs twice
    assert len(_read(out, "bpe/train.en")) == 3
    joined = [line.replace("@@ ", "") for line in _read(out, "bpe/train.it")]
    assert joined == _read(out, "train.it")


def test_keep_eval_splits_keeps_every_dev_and_test_line_in_file_order(tmp_path):
    rows = {
        "train": PAIRS[:3],
        "dev": [PAIRS[4], PAIRS[0], PAIRS[4]],  # a train pair and a repeat
        "test": [PAIRS[2], ("", "Vuoto."), PAIRS[1]],  # an empty side, a long pair
    }
    for split, pairs in rows.items():
        (tmp_path / ("%s.en" % split)).write_text("".join(r[0] + "\n" for r in pairs), "utf-8")
        (tmp_path / ("%s.it" % split)).write_text("".join(r[1] + "\n" for r in pairs), "utf-8")
    argv = ["--%s_prefix=%s" % (s, tmp_path / s) for s in translation.SPLITS]
    stats, out = _build(tmp_path, *argv, "--keep_eval_splits", "--max_len=5")
    assert stats.pairs == dict(train=2, dev=3, test=3)  # train's long pair is dropped
    for split in ("dev", "test"):
        assert _read(out, split + ".en") == [tokenizers.tokenize(en) for en, _ in rows[split]]
        assert _read(out, split + ".it") == [tokenizers.tokenize(it) for _, it in rows[split]]
    with pytest.raises(translation.ParallelError, match="test.en:2: empty source side"):
        _build(tmp_path, *argv)


@pytest.mark.parametrize(
    "content, message",
    [
        ("en\tfr\na\tb\n", r"pairs.tsv:1: no column 'it' \(the header has 'en', 'fr'\)"),
        ("en\tit\na\tb\tc\n", r"pairs.tsv:2: 3 cells, but the header has 2"),
        ("en\tit\na\t\n", r"pairs.tsv:2: empty target side; .*--skip_empty"),
        (b"en\tit\ncaf\xe9\tx\n", r"pairs.tsv:2: byte 4 of the line is not UTF-8"),
    ],
)
def test_bad_input_is_one_line_naming_the_file_and_line(tmp_path, content, message):
    path = tmp_path / "pairs.tsv"
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    with pytest.raises(translation.ParallelError, match=message):
        _build(tmp_path, "--input=%s" % path)


def test_a_corpus_is_replaced_only_with_overwrite(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("en\tit\n" + "".join("%s\t%s\n" % pair for pair in PAIRS), "utf-8")
    out = tmp_path / "out"
    argv = ["x", "--src=en", "--tgt=it", "--input=%s" % path, "--out_dir=%s" % out]
    argv += ["--allow_empty=dev,test"]
    translation.build(config_lib.parse(translation.define_flags, argv))
    before = (out / "train.en").read_bytes()
    with pytest.raises(splits.CorpusExistsError, match="--overwrite to replace it"):
        translation.build(config_lib.parse(translation.define_flags, argv + ["--lowercase"]))
    assert (out / "train.en").read_bytes() == before
    overwrite = config_lib.parse(translation.define_flags, argv + ["--overwrite", "--lowercase"])
    held = files.lock_beside(str(out), "corpus build")  # another build writes the folder
    with pytest.raises(files.FolderInUseError, match="being written by another corpus build"):
        translation.build(overwrite)
    held.close()
    assert (out / "train.en").read_bytes() == before
    translation.build(overwrite)


def test_an_input_of_no_pair_is_named(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("en\tit\n\n", "utf-8")
    with pytest.raises(splits.EmptySplitError) as refused:
        _build(tmp_path, "--input=%s" % path)
    assert str(refused.value) == (
        "%s holds no pair (not one row under its header); give a file with pairs in it" % path
    )
    (tmp_path / "x.en").write_text("")
    (tmp_path / "x.it").write_text("")
    with pytest.raises(splits.EmptySplitError, match=r"x.en holds no pair \(not one line\)"):
        _build(tmp_path, "--input_prefix=%s" % (tmp_path / "x"))


def test_skip_empty_and_unaligned_files(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("en\tit\n\tb\na\tb\n", "utf-8")
    stats, _ = _build(tmp_path, "--input=%s" % path, "--skip_empty")
    assert stats.empty_dropped == 1
    (tmp_path / "x.en").write_text("a\nb\n")
    (tmp_path / "x.it").write_text("a\n")
    with pytest.raises(translation.ParallelError, match="x.en has 2 lines but .*x.it has 1"):
        _build(tmp_path, "--input_prefix=%s" % (tmp_path / "x"))


# about the corpus, not the graph: the steps run traced in the host's own tests
@pytest.mark.eager
def test_nmt_trains_on_a_built_corpus(tmp_path):
    path = tmp_path / "pairs.tsv"
    rows = ["%s %d.\t%s %d." % (en[:-1], i, it[:-1], i) for i in range(40) for en, it in PAIRS[:1]]
    path.write_text("en\tit\n" + "".join(r + "\n" for r in rows), "utf-8")
    _, out = _build(tmp_path, "--input=%s" % path)
    argv = [
        "run_nmt",
        "--src=en",
        "--tgt=it",
        "--vocab_prefix=%s" % (out / "vocab"),
        "--train_prefix=%s" % (out / "train"),
        "--dev_prefix=%s" % (out / "dev"),
        "--out_dir=%s" % (tmp_path / "model"),
        "--num_units=8",
        "--batch_size=4",
        "--num_train_steps=3",
        "--steps_per_stats=1",
    ]
    assert run_nmt.run(config_lib.parse(run_nmt.define_flags, argv)) >= 0.0


def test_tftext_with_bpe_tokenises_in_batches_and_logs_its_progress(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(splits, "TOKENIZE_BATCH", 2)
    lines = []
    monkeypatch.setattr(logging, "info", lambda fmt, *args: lines.append(fmt % args))
    path = tmp_path / "pairs.tsv"
    rows = PAIRS + [("“Quoted” — 1,000 items…", "Straße ﬁne ０１２ 👍🏽")]
    path.write_text("en\tit\n" + "".join("%s\t%s\n" % row for row in rows), "utf-8")
    argv = ["--input=%s" % path, "--tokenizer=tftext", "--nolowercase", "--bpe_merges=200"]
    stats, out = _build(tmp_path, *argv, "--max_train=5", "--max_dev=0", "--max_test=0")
    written = list(zip(_read(out, "train.en"), _read(out, "train.it")))
    one = tokenizers.tokenizer("tftext", lowercase=False)
    assert sorted(written) == sorted({(one(en), one(it)) for en, it in rows})
    # the first line and the last of each stage; the others are at least 10 s apart
    merges = stats.bpe_merges
    assert 0 < merges < 200 and [line.split(",")[0] for line in lines] == [
        "tokenised 2/6 pairs",
        "tokenised 6/6 pairs",
        "learning 200 BPE merges: counting the words of 10 lines",
        "learned 2/200 BPE merges",
        "learned %d BPE merges: no other pair occurs twice" % merges,
        "segmented 1/10 lines",
        "segmented 10/10 lines",
    ]
    assert "it/s" not in capsys.readouterr().err  # nor subword-nmt's own progress bar

"""The WMT'16 front end of data_prep.translation: cased tokenized splits, joint BPE that
round-trips, word and BPE vocabularies, corpus.json, and dev/test sets kept whole."""

import json

import pytest
from inputs import EN, RO

from acvi_tf.formats import bpe, nmt_text
from acvi_tf.text import tokenizers
from data_prep import translation, wmt16
from nmt import data


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _raw(tmp_path, splits):
    raw = tmp_path / "raw"
    raw.mkdir()
    for name, (en, ro) in splits.items():
        _write(raw / (name + ".en"), en)
        _write(raw / (name + ".ro"), ro)
    return raw


def _read(path):
    return path.read_text(encoding="utf-8").splitlines()


def test_prepare_writes_tokenized_and_bpe_files(tmp_path):
    raw = _raw(tmp_path, {"train": (EN, RO), "newsdev2016": (EN[:2], RO[:2])})
    out = tmp_path / "wmt16"
    stats = wmt16.prepare(
        "en", "ro", {"train": str(raw / "train"), "dev": str(raw / "newsdev2016")}, str(out), 20
    )
    assert stats.pairs == {"train": 5, "dev": 2, "test": 0}
    assert "Casa este mică ." in _read(out / "train.ro")  # case kept, punctuation split
    for name in ("train.en", "train.ro", "dev.en", "dev.ro"):
        segmented = _read(out / "bpe" / name)
        assert [bpe.remove_bpe(line) for line in segmented] == _read(out / name)
    assert any("@@" in line for line in _read(out / "bpe" / "train.en"))
    for vocab_path in (out / "bpe" / "vocab.ro", out / "vocab.ro"):
        vocab = data.Vocab(str(vocab_path))
        assert vocab.words()[:3] == [nmt_text.UNK, nmt_text.SOS, nmt_text.EOS]
    assert "Casa" in data.Vocab(str(out / "vocab.ro")).words()  # word level, cased
    record = json.loads((out / "corpus.json").read_text())
    assert record == dict(src="en", tgt="ro", tokenizer="treebank", lowercase=False, bpe=True)


def test_dev_and_test_keep_every_line_in_file_order(tmp_path):
    """Official sets stay whole: duplicates, train pairs, empty sides and file order."""
    long_en, long_ro = " ".join(["house"] * 120), " ".join(["casa"] * 120)
    dev = ([EN[3], EN[0], EN[3], "", long_en], [RO[3], RO[0], RO[3], "", long_ro])
    test = ([EN[4], EN[1], EN[4]], [RO[4], RO[1], ""])
    train = (EN + [EN[0], ""], RO + [RO[0], "Ceva."])
    raw = _raw(tmp_path, {"train": train, "dev": dev, "test": test})
    out = tmp_path / "wmt16"
    prefixes = {split: str(raw / split) for split in ("train", "dev", "test")}
    stats = wmt16.prepare("en", "ro", prefixes, str(out), 20)
    assert stats.pairs == {"train": 5, "dev": 5, "test": 3}
    assert (stats.duplicates_dropped, stats.empty_dropped) == (1, 1)  # train only
    for split, (en, ro) in (("dev", dev), ("test", test)):
        for lang, lines in (("en", en), ("ro", ro)):
            tokenized = [tokenizers.tokenize(line, lowercase=False) for line in lines]
            assert _read(out / ("%s.%s" % (split, lang))) == tokenized
            assert len(_read(out / "bpe" / ("%s.%s" % (split, lang)))) == len(lines)


def test_line_count_mismatch_is_named(tmp_path):
    _write(tmp_path / "train.en", EN)
    _write(tmp_path / "train.ro", RO[:4])
    with pytest.raises(translation.ParallelError, match="train.en"):
        wmt16.prepare("en", "ro", {"train": str(tmp_path / "train")}, str(tmp_path / "o"), 10)

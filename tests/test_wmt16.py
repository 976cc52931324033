"""The WMT'16 preparation: tokenized splits, joint BPE that round-trips, vocabularies."""

import pytest

from acvi_tf.formats import bpe, nmt_text
from data_prep import wmt16
from nmt import data

EN = [
    "The house is small.",
    "The small house is red.",
    "A red car drives home.",
    "Houses are small here.",
    "Cars drive to the red house.",
]
RO = [
    "Casa este mică.",
    "Casa mică este roșie.",
    "O mașină roșie merge acasă.",
    "Casele sunt mici aici.",
    "Mașinile merg la casa roșie.",
]


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_prepare_writes_tokenized_and_bpe_files(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    _write(raw / "train.en", EN)
    _write(raw / "train.ro", RO)
    _write(raw / "newsdev2016.en", EN[:2])
    _write(raw / "newsdev2016.ro", RO[:2])
    out = tmp_path / "wmt16"
    counts = wmt16.prepare(
        "en", "ro", {"train": str(raw / "train"), "dev": str(raw / "newsdev2016")}, str(out), 20
    )
    assert counts == {"train": 5, "dev": 2}
    tokenized = (out / "tok" / "train.ro").read_text(encoding="utf-8").splitlines()
    assert tokenized[0] == "Casa este mică ."  # case kept, punctuation split
    for name in ("train.en", "train.ro", "newsdev2016.en", "newsdev2016.ro"):
        segmented = (out / "bpe" / name).read_text(encoding="utf-8").splitlines()
        original = (out / "tok" / name).read_text(encoding="utf-8").splitlines()
        assert [bpe.remove_bpe(line) for line in segmented] == original
    assert any("@@" in line for line in (out / "bpe" / "train.en").read_text().splitlines())
    vocab = data.Vocab(str(out / "bpe" / "vocab.ro"))
    assert vocab.words()[:3] == [nmt_text.UNK, nmt_text.SOS, nmt_text.EOS]


def test_line_count_mismatch_is_named(tmp_path):
    _write(tmp_path / "train.en", EN)
    _write(tmp_path / "train.ro", RO[:4])
    with pytest.raises(nmt_text.NmtDataError, match="train.en"):
        wmt16.prepare("en", "ro", {"train": str(tmp_path / "train")}, str(tmp_path / "o"), 10)

"""The character-level Pig Latin task builder and its shipped sample."""

import os
import re
import string

import pytest

from data_prep import pig_latin as pl
from data_prep import splits, translation

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "data_prep", "samples", "pig_latin")
VOCAB = ["<unk>", "<s>", "</s>"] + list(string.ascii_lowercase) + ["-"]

# Every pair is taken from the assignment's data file, pig_latin_data.txt.
ASSIGNMENT_PAIRS = [
    ("team", "eamtay"),
    ("impress", "impressway"),
    ("shopping", "oppingshay"),
    ("i", "iway"),
    ("went", "entway"),
    ("the", "ethay"),
    ("family", "amilyfay"),
    ("of", "ofway"),
    # the whole leading consonant cluster moves
    ("strong", "ongstray"),
    ("christmas", "istmaschray"),
    ("what", "atwhay"),
    ("threatening", "eateningthray"),
    ("scruples", "uplesscray"),
    # "qu" moves as a block, also after another consonant
    ("quit", "itquay"),
    ("question", "estionquay"),
    ("square", "aresquay"),
    # "y" ends the cluster, even as the first letter, and never takes "way"
    ("fly", "yflay"),
    ("hysterical", "ystericalhay"),
    ("yet", "yetay"),
    ("younger", "youngeray"),
    # no vowel: the whole word moves
    ("mrs", "mrsay"),
    ("w", "way"),
    # hyphenated words: part by part
    ("good-humoured", "oodgay-umouredhay"),
    ("self-evident", "elfsay-evidentway"),
    ("by-and-by", "ybay-andway-ybay"),
    ("bond-street", "ondbay-eetstray"),
]


def _lines(directory, name):
    with open(os.path.join(directory, name), encoding="utf-8") as f:
        return f.read().splitlines()


@pytest.mark.parametrize("word,expected", ASSIGNMENT_PAIRS)
def test_rules_of_the_assignment(word, expected):
    assert pl.pig_latin(word) == expected


@pytest.mark.parametrize("word", ["", "Shop", "don't", "-a", "a--b", "a-", "x86", "café"])
def test_other_strings_are_refused(word):
    with pytest.raises(ValueError, match="lowercase letters"):
        pl.pig_latin(word)


def test_build_writes_character_lines_and_the_fixed_vocab(tmp_path):
    words_file = tmp_path / "vocab"
    words_file.write_text(
        "the 50\n. 40\nshop 9\nquit 8\nC++ 7\nx86 6\nwell-known 5\nshop 4\n"
        "yet 3\nabcdefghijklmnopqrstu 2\n\n",
        encoding="utf-8",
    )
    out = str(tmp_path / "out")
    stats = pl.build(str(words_file), out, max_word_chars=20, allow_empty=["dev", "test"])
    assert (stats.lines_read, stats.not_words, stats.too_long, stats.duplicates) == (11, 4, 1, 1)
    words = set()
    for split in translation.SPLITS:
        sources, targets = _lines(out, split + ".src"), _lines(out, split + ".tgt")
        assert len(sources) == len(targets) == stats.words[split]
        for source, target in zip(sources, targets):
            assert re.fullmatch(r"\S( \S)*", source) and re.fullmatch(r"\S( \S)*", target)
            word = source.replace(" ", "")
            assert target == " ".join(pl.pig_latin(word))
            assert set(source.split() + target.split()) <= set(VOCAB[3:])
            assert splits.split_of(splits.key_hash(word), translation.SPLITS) == split
            words.add(word)
    assert words == {"the", "shop", "quit", "well-known", "yet"}
    assert _lines(out, "vocab.src") == _lines(out, "vocab.tgt") == VOCAB
    assert stats.vocab_size == 30


def test_caps_keep_the_smallest_hashes(tmp_path):
    words = ["w%s" % letter for letter in string.ascii_lowercase]
    words_file = tmp_path / "words"
    words_file.write_text("\n".join(words), encoding="utf-8")
    full, capped = str(tmp_path / "full"), str(tmp_path / "capped")
    pl.build(str(words_file), full, allow_empty=["dev", "test"])
    stats = pl.build(str(words_file), capped, caps={"train": 3}, allow_empty=["dev", "test"])
    assert stats.words["train"] == 3
    assert stats.words_before_caps["train"] == len(_lines(full, "train.src"))
    assert _lines(capped, "train.src") == _lines(full, "train.src")[:3]
    hashes = [splits.key_hash(line.replace(" ", "")) for line in _lines(full, "train.src")]
    assert hashes == sorted(hashes)


def test_unreadable_words_file_is_reported(tmp_path):
    with pytest.raises(pl.WordsFileError, match="cannot read --words_file"):
        pl.build(str(tmp_path / "missing"), str(tmp_path / "out"))
    latin1 = tmp_path / "latin1"
    latin1.write_bytes(b"shop 1\ncaf\xe9 1\n")
    with pytest.raises(pl.WordsFileError, match="latin1:2: not UTF-8"):
        pl.build(str(latin1), str(tmp_path / "out"))


# The shipped sample.


def test_sample_counts_match_its_readme():
    with open(os.path.join(SAMPLE, "README.md"), encoding="utf-8") as f:
        table = dict(re.findall(r"^\| (train|dev|test) +\| (\d+) ", f.read(), re.MULTILINE))
    assert set(table) == set(translation.SPLITS)
    for split in translation.SPLITS:
        assert len(_lines(SAMPLE, split + ".src")) == int(table[split])
        assert len(_lines(SAMPLE, split + ".tgt")) == int(table[split])


def test_sample_lines_are_characters_of_pig_latin_pairs():
    assert _lines(SAMPLE, "vocab.src") == _lines(SAMPLE, "vocab.tgt") == VOCAB
    used = set()
    for split in translation.SPLITS:
        for source, target in zip(_lines(SAMPLE, split + ".src"), _lines(SAMPLE, split + ".tgt")):
            assert source and target
            assert target == " ".join(pl.pig_latin(source.replace(" ", "")))
            used.update(source.split(), target.split())
    assert used == set(VOCAB[3:])

"""The Debian English -> German translation builder and its shipped sample."""

import hashlib
import itertools
import os
import re

import pytest

from acvi_tf.formats import bpe, nmt_text
from acvi_tf.text.tokenizers import tokenize
from data_prep import debian_descriptions as dd
from data_prep import debian_translations as dt
from data_prep import splits, translation

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "data_prep", "samples", "debian_en_de")
LANGUAGES = ("en", "de")
FILES = ["%s.%s" % (split, lang) for split in translation.SPLITS for lang in LANGUAGES]


def _record(lang, package, md5, synopsis, *paragraphs):
    """A Translation-``lang`` record; paragraphs are separated by `` .`` lines."""
    lines = [
        "Package: " + package,
        "Description-md5: " + md5,
        "Description-%s: %s" % (lang, synopsis),
    ]
    for index, paragraph in enumerate(paragraphs):
        if index:
            lines.append(" .")
        lines.append(" " + paragraph)
    return "\n".join(lines) + "\n"


def _write(path, *records):
    path.write_text("\n".join(records), encoding="utf-8")
    return str(path)


def _md5s(split, count):
    """The first ``count`` md5 strings of "dN" whose sha1 bucket falls in ``split``."""
    md5s = (hashlib.md5(b"d%d" % i).hexdigest() for i in itertools.count())
    wanted = (m for m in md5s if splits.split_of(splits.key_hash(m), translation.SPLITS) == split)
    return list(itertools.islice(wanted, count))


def _lines(directory, name):
    with open(os.path.join(directory, name), encoding="utf-8") as f:
        return f.read().splitlines()


def _corpus(tmp_path, per_split=3):
    """Indexes with ``per_split`` descriptions per split, each of a synopsis + 2 paragraphs."""
    en, de = [], []
    for split in translation.SPLITS:
        for n, md5 in enumerate(_md5s(split, per_split)):
            tag = "%s%d" % (split, n)
            en.append(
                _record(
                    "en",
                    "pkg-" + tag,
                    md5,
                    "Tool %s" % tag,
                    "First part of %s." % tag,
                    "Second part of %s." % tag,
                )
            )
            de.append(
                _record(
                    "de",
                    "pkg-" + tag,
                    md5,
                    "Werkzeug %s" % tag,
                    "Erster Teil von %s." % tag,
                    "Zweiter Teil von %s." % tag,
                )
            )
    return _write(tmp_path / "Translation-en", *en), _write(tmp_path / "Translation-de", *de)


def test_join_on_md5_and_align_paragraphs_only_when_counts_match(tmp_path):
    en = _write(
        tmp_path / "en",
        _record("en", "alpha", "a" * 32, "Alpha tool", "Alpha does A.", "It is fast."),
        _record("en", "beta", "b" * 32, "Beta tool", "Beta does B.", "It is slow."),
        _record("en", "gamma", "c" * 32, "Gamma tool", "Gamma does C."),
    )
    de = _write(
        tmp_path / "de",
        # another package sharing alpha's description: the md5 is what joins
        _record(
            "de", "alpha-extra", "a" * 32, "Alpha-Werkzeug", "Alpha macht A.", "Es ist schnell."
        ),
        _record("de", "beta", "b" * 32, "Beta-Werkzeug", "Beta macht B. Es ist langsam."),
        _record("de", "delta", "d" * 32, "Delta-Werkzeug", "Delta macht D."),
    )
    stats = dt.Stats()
    english = dt.read_descriptions(en, "en", stats)
    german = dt.read_descriptions(de, "de", stats)
    pairs = dt.make_pairs(english, german, max_len=50, stats=stats)
    assert [(p.key, p.src, p.tgt) for p in pairs] == [
        ("a" * 32, "alpha tool", "alpha-werkzeug"),
        ("a" * 32, "alpha does a .", "alpha macht a ."),
        ("a" * 32, "it is fast .", "es ist schnell ."),
        ("b" * 32, "beta tool", "beta-werkzeug"),
    ]
    assert (stats.joined, stats.paragraphs_aligned, stats.paragraphs_mismatched) == (2, 1, 1)
    assert stats.records_read == {"en": 3, "de": 3}


def test_repeated_md5_uses_the_first_record(tmp_path):
    de = _write(
        tmp_path / "de",
        _record("de", "one", "a" * 32, "Erste"),
        _record("de", "two", "a" * 32, "Zweite"),
    )
    stats = dt.Stats()
    german = dt.read_descriptions(de, "de", stats)
    assert german["a" * 32].synopsis == "Erste"
    assert stats.repeated_md5["de"] == 1


def test_identical_pairs_are_kept_once(tmp_path):
    shared = "This package contains the documentation."
    en = _write(
        tmp_path / "en",
        _record("en", "x", "a" * 32, "X docs", shared),
        _record("en", "y", "b" * 32, "Y docs", shared),
        _record("en", "z", "c" * 32, "X docs"),
    )
    de = _write(
        tmp_path / "de",
        _record("de", "x", "a" * 32, "X-Doku", "Dieses Paket enthält die Doku."),
        _record("de", "y", "b" * 32, "Y-Doku", "Dieses Paket enthält die Doku."),
        _record("de", "z", "c" * 32, "X-Dokumentation"),
    )
    stats = dt.Stats()
    pairs = dt.make_pairs(
        dt.read_descriptions(en, "en", stats), dt.read_descriptions(de, "de", stats), 50, stats
    )
    assert [p.src for p in pairs] == [
        "x docs",
        "this package contains the documentation .",
        "y docs",
        "x docs",
    ]
    assert stats.duplicates_dropped == 1  # the same English with other German stays


def test_long_and_empty_pairs_are_dropped(tmp_path):
    en = _write(
        tmp_path / "en",
        _record("en", "a", "a" * 32, "Short", " ".join(["word"] * 6)),
        _record("en", "b", "b" * 32, "Has a German synopsis only"),
    )
    de = _write(
        tmp_path / "de",
        _record("de", "a", "a" * 32, "Kurz", "Wort"),
        _record("de", "b", "b" * 32, ""),
    )
    stats = dt.Stats()
    pairs = dt.make_pairs(
        dt.read_descriptions(en, "en", stats), dt.read_descriptions(de, "de", stats), 5, stats
    )
    assert [p.src for p in pairs] == ["short"]
    assert (stats.too_long_dropped, stats.empty_dropped) == (1, 1)


def test_bpe_separator_cannot_occur_in_the_word_level_text():
    assert bpe.SEPARATOR not in tokenize("Tests if ES6 @@toStringTag is supported")


def test_missing_fields_name_file_and_line(tmp_path):
    good = _record("de", "a", "a" * 32, "Gut")
    no_md5 = "Package: b\nDescription-de: Ohne md5\n"
    path = _write(tmp_path / "de", good, no_md5)
    with pytest.raises(dd.TranslationFileError, match=r"de:5: .*no Description-md5"):
        dt.read_descriptions(path, "de", dt.Stats())
    wrong_language = _write(tmp_path / "en", _record("en", "a", "a" * 32, "English"))
    with pytest.raises(dd.TranslationFileError, match=r"en:1: .*no Description-de"):
        dt.read_descriptions(wrong_language, "de", dt.Stats())


def test_hash_split_keeps_each_description_in_one_split(tmp_path):
    en, de = _corpus(tmp_path)
    out = str(tmp_path / "out")
    stats = dt.build(en, de, out, bpe_merges=20)
    assert stats.pairs == {"train": 9, "dev": 9, "test": 9}
    for split in translation.SPLITS:
        english = _lines(out, split + ".en")
        tags = {re.search(r"(train|dev|test)\d", line).group(0) for line in english}
        assert {tag.rstrip("0123456789") for tag in tags} == {split}
        assert len(english) == 3 * len(tags)
        assert len(_lines(out, split + ".de")) == len(english)


def test_vocab_files_have_specials_then_train_tokens_by_count(tmp_path):
    assert translation.vocab_tokens(["b a b", "c a b </s>", "d"], min_count=1) == [
        "b",
        "a",
        "c",
        "d",
    ]
    assert translation.vocab_tokens(["b a b", "c a b"], min_count=2) == ["b", "a"]
    en, de = _corpus(tmp_path)
    out = str(tmp_path / "out")
    stats = dt.build(en, de, out, bpe_merges=20)
    for lang in LANGUAGES:
        vocab = _lines(out, "vocab." + lang)
        assert vocab[:3] == ["<unk>", "<s>", "</s>"]
        train_tokens = {t for line in _lines(out, "train." + lang) for t in line.split()}
        assert sorted(vocab[3:]) == sorted(train_tokens)
        assert len(vocab) == stats.vocab_size[lang]


def test_bpe_variant_round_trips(tmp_path):
    en, de = _corpus(tmp_path)
    out = str(tmp_path / "out")
    stats = dt.build(en, de, out, bpe_merges=40)
    bpe_dir = os.path.join(out, translation.BPE_DIR)
    assert _lines(bpe_dir, "codes")[0].startswith("#version")
    assert 0 < stats.bpe_merges <= 40
    segmented = False
    for name in FILES:
        bpe_lines = _lines(bpe_dir, name)
        segmented |= any("@@ " in line for line in bpe_lines)
        assert [re.sub("@@( |$)", "", line) for line in bpe_lines] == _lines(out, name)
    assert segmented
    for lang in LANGUAGES:
        vocab = _lines(bpe_dir, "vocab." + lang)
        assert vocab[:3] == ["<unk>", "<s>", "</s>"]
        units = {u for line in _lines(bpe_dir, "train." + lang) for u in line.split()}
        assert set(vocab[3:]) == units


def test_caps_keep_a_prefix_of_each_split(tmp_path):
    en, de = _corpus(tmp_path)
    full, capped = str(tmp_path / "full"), str(tmp_path / "capped")
    dt.build(en, de, full, bpe_merges=20)
    stats = dt.build(en, de, capped, caps={"train": 4, "dev": 0, "test": None}, bpe_merges=20)
    assert stats.pairs == {"train": 4, "dev": 0, "test": 9}
    assert stats.pairs_before_caps == {"train": 9, "dev": 9, "test": 9}
    assert _lines(capped, "train.de") == _lines(full, "train.de")[:4]
    assert _lines(capped, "dev.en") == []
    assert _lines(capped, "test.en") == _lines(full, "test.en")


# The shipped sample.


def _readme():
    with open(os.path.join(SAMPLE, "README.md"), encoding="utf-8") as f:
        return f.read()


def test_sample_counts_match_its_readme():
    table = dict(re.findall(r"^\| (train|dev|test) +\| (\d+) ", _readme(), re.MULTILINE))
    assert set(table) == set(translation.SPLITS)
    for split in translation.SPLITS:
        english, german = _lines(SAMPLE, split + ".en"), _lines(SAMPLE, split + ".de")
        assert len(english) == len(german) == int(table[split])
        assert all(english) and all(german)
    merges = re.search(r"`bpe/codes` holds ([\d,]+) merges", _readme()).group(1)
    assert len(_lines(os.path.join(SAMPLE, translation.BPE_DIR), "codes")) - 1 == int(
        merges.replace(",", "")
    )


def test_sample_tokens_are_in_the_vocab_and_bpe_reconstructs():
    bpe_dir = os.path.join(SAMPLE, translation.BPE_DIR)
    for lang in LANGUAGES:
        vocab = _lines(SAMPLE, "vocab." + lang)
        assert vocab[:3] == list(nmt_text.SPECIALS) and len(set(vocab)) == len(vocab)
        train_tokens = {t for line in _lines(SAMPLE, "train." + lang) for t in line.split()}
        assert train_tokens == set(vocab[3:])
        bpe_vocab = _lines(bpe_dir, "vocab." + lang)
        assert bpe_vocab[:3] == list(nmt_text.SPECIALS)
        units = {u for line in _lines(bpe_dir, "train." + lang) for u in line.split()}
        assert units == set(bpe_vocab[3:])
    for name in FILES:
        assert [re.sub("@@( |$)", "", line) for line in _lines(bpe_dir, name)] == _lines(
            SAMPLE, name
        )

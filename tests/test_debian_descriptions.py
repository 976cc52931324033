"""The Debian descriptions corpus builder and its shipped sample."""

import collections
import glob
import gzip
import hashlib
import itertools
import lzma
import os
import re
import shutil
import subprocess

import pytest

from acvi_tf.formats.bin_files import read_bin_file
from acvi_tf.text import tokenizers
from data_prep import debian_descriptions as dd
from data_prep import splits, summarization

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "data_prep", "samples", "debian_descriptions")


def _record_text(package, synopsis, *long_lines):
    lines = [
        "Package: " + package,
        "Description-md5: 0123456789abcdef",
        "Description-en: " + synopsis,
    ]
    lines += [" " + line for line in long_lines]
    return "\n".join(lines) + "\n"


def _write(path, *records):
    path.write_text("\n".join(records), encoding="utf-8")
    return str(path)


def _bucket(package):
    return int(hashlib.sha1(package.encode("utf-8")).hexdigest(), 16) % 100


def _names(split, count):
    """The first ``count`` names pkgN whose hash bucket falls in ``split``."""
    ranges = {"train": range(0, 90), "val": range(90, 95), "test": range(95, 100)}
    names = ("pkg%d" % i for i in itertools.count())
    return list(itertools.islice((n for n in names if _bucket(n) in ranges[split]), count))


def _read_split(out_dir, split):
    pairs = []
    for path in sorted(glob.glob(os.path.join(out_dir, "chunked", split + "_*.bin"))):
        pairs.extend(read_bin_file(path))
    return pairs


def _corpus(tmp_path, per_split=3):
    """A file with ``per_split`` packages in each split, each with its own description."""
    records = []
    for split in summarization.SPLITS:
        for name in _names(split, per_split):
            records.append(
                _record_text(
                    name, "Synopsis of %s" % name, "Long text about %s in %s." % (name, split)
                )
            )
    return _write(tmp_path / "Translation-en", *records)


def test_parse_multi_paragraph_record(tmp_path):
    path = _write(
        tmp_path / "t",
        _record_text(
            "foo",
            "Frobnicate the widgets",
            "First paragraph, first line",
            "and its second line.",
            ".",
            "  Second paragraph.",
            ".",
            "Third.",
        ),
        _record_text("bar", "Bar only", "Bar text."),
    )
    with dd.open_lines(path) as lines:
        records = list(dd.parse_records(lines, path))
    assert [r.package for r in records] == ["foo", "bar"]
    foo = records[0]
    assert foo.synopsis == "Frobnicate the widgets"
    assert foo.paragraphs == (
        "First paragraph, first line and its second line.",
        "Second paragraph.",
        "Third.",
    )
    assert foo.long_description == (
        "First paragraph, first line and its second line. Second paragraph. Third."
    )
    assert (foo.line, records[1].line) == (1, 11)


def test_tokenize_lowercases_splits_sentences_and_keeps_abbreviations():
    assert tokenizers.tokenize("It's a GTK+ tool (e.g. for KDE). It works, i.e. Fine!") == (
        "it 's a gtk+ tool ( e.g. for kde ) . it works , i.e. fine !"
    )
    assert tokenizers.tokenize('Says "Hello world."') == "says `` hello world . ''"


def test_pairs_format_dedup_and_empty_skip(tmp_path):
    path = _write(
        tmp_path / "t",
        _record_text("foo", "The Foo tool", "Shared text.", ".", "Second part."),
        _record_text("foo-data", "Data for Foo", "Shared text.", ".", "Second part."),
        _record_text("empty", "No long description"),
        _record_text("baz", "Baz: a Thing", "Shared text."),
    )
    stats = summarization.Stats()
    with dd.open_lines(path) as lines:
        pairs = dd.make_pairs(dd.parse_records(lines, path), 400, stats)
    assert [(p.key, p.article, p.abstract) for p in pairs] == [
        ("foo", "shared text . second part .", "<s> the foo tool </s>"),
        ("baz", "shared text .", "<s> baz : a thing </s>"),
    ]
    assert (stats.records_read, stats.empty_articles_skipped, stats.duplicates_dropped) == (
        4,
        1,
        1,
    )


def test_too_long_articles_are_dropped_and_counted(tmp_path):
    path = _write(
        tmp_path / "t",
        _record_text("short", "S", "one two three"),
        _record_text("long", "L", "one two three four"),
    )
    stats = summarization.Stats()
    with dd.open_lines(path) as lines:
        pairs = dd.make_pairs(dd.parse_records(lines, path), 3, stats)
    assert [p.key for p in pairs] == ["short"]
    assert stats.too_long_dropped == 1


def test_hash_split_is_deterministic_and_follows_the_rule():
    for i in range(300):
        name = "package-%d" % i
        value = splits.key_hash(name)
        assert value == int(hashlib.sha1(name.encode("utf-8")).hexdigest(), 16)
        bucket = _bucket(name)
        expected = "train" if bucket < 90 else ("val" if bucket < 95 else "test")
        assert splits.split_of(value, summarization.SPLITS) == expected


def test_build_writes_each_split_in_hash_order(tmp_path):
    out = str(tmp_path / "out")
    stats = dd.build(_corpus(tmp_path), out)
    for split in summarization.SPLITS:
        names = sorted(_names(split, 3), key=splits.key_hash)
        expected = [
            ("long text about %s in %s ." % (n, split), "<s> synopsis of %s </s>" % n)
            for n in names
        ]
        assert _read_split(out, split) == expected
        assert list(read_bin_file(os.path.join(out, split + ".bin"))) == expected
        assert stats.pairs[split] == 3


def test_caps_keep_the_smallest_hashes_and_remove_stale_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(summarization, "CHUNK_SIZE", 2)
    corpus = _corpus(tmp_path, per_split=5)
    out = str(tmp_path / "out")
    dd.build(corpus, out)
    full = {split: _read_split(out, split) for split in summarization.SPLITS}
    assert len(os.listdir(os.path.join(out, "chunked"))) == 9
    stats = dd.build(corpus, out, caps={"train": 2, "val": 1, "test": None})
    for split, kept in (("train", 2), ("val", 1), ("test", 5)):
        smallest = sorted(_names(split, 5), key=splits.key_hash)[:kept]
        pairs = _read_split(out, split)
        assert pairs == full[split][:kept]
        assert [abstract for _, abstract in pairs] == [
            "<s> synopsis of %s </s>" % n for n in smallest
        ]
        assert (stats.pairs[split], stats.pairs_before_caps[split]) == (kept, 5)
    assert sorted(os.listdir(os.path.join(out, "chunked"))) == [
        "test_000.bin",
        "test_001.bin",
        "test_002.bin",
        "train_000.bin",
        "val_000.bin",
    ]
    assert os.path.exists(os.path.join(out, "train.bin"))
    dd.build(corpus, out, full_bins=False)
    assert not glob.glob(os.path.join(out, "*.bin"))
    assert _read_split(out, "train") == full["train"]


def test_vocab_follows_see(tmp_path):
    train, val = _names("train", 2), _names("val", 1)
    path = _write(
        tmp_path / "t",
        _record_text(train[0], "Alpha beta", "Alpha alpha gamma."),
        _record_text(train[1], "Gamma", "Delta alpha <s> </s>."),
        _record_text(val[0], "Valonly", "Valonly words."),
    )
    out = str(tmp_path / "out")
    stats = dd.build(path, out, allow_empty=["test"])
    with open(os.path.join(out, "vocab"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    entries = [line.split(" ") for line in lines]
    assert all(len(e) == 2 for e in entries)
    counts = {word: int(count) for word, count in entries}
    assert counts == {
        "alpha": 4,
        "gamma": 2,
        ".": 2,
        "<": 2,
        ">": 2,
        "beta": 1,
        "delta": 1,
        "s": 1,
        "/s": 1,
    }
    assert [int(c) for _, c in entries] == sorted(counts.values(), reverse=True)
    assert stats.vocab_size == len(lines) == 9


def test_the_vocab_counts_drop_sentence_marks_and_empty_tokens():
    pair = summarization.Pair("p", "a  b a", "<s> b </s>", 0)
    counter = collections.Counter()
    summarization.count_words(counter, pair)
    assert counter == collections.Counter({"a": 2, "b": 2})


@pytest.mark.parametrize("opener,suffix", [(gzip.open, ".gz"), (lzma.open, ".xz")])
def test_compressed_inputs_read_like_plain(tmp_path, opener, suffix):
    plain = _corpus(tmp_path)
    packed = plain + suffix
    with open(plain, "rb") as src, opener(packed, "wb") as dst:
        dst.write(src.read())
    with dd.open_lines(plain) as a, dd.open_lines(packed) as b:
        assert list(dd.parse_records(a)) == list(dd.parse_records(b))
    dd.build(plain, str(tmp_path / "plain"))
    dd.build(packed, str(tmp_path / "packed"))
    for name in (
        "chunked/train_000.bin",
        "chunked/val_000.bin",
        "chunked/test_000.bin",
        "train.bin",
        "vocab",
    ):
        with (
            open(tmp_path / "plain" / name, "rb") as a,
            open(tmp_path / "packed" / name, "rb") as b,
        ):
            assert a.read() == b.read(), name


@pytest.mark.skipif(shutil.which("lz4") is None, reason="needs the lz4 command")
def test_lz4_input_reads_like_plain(tmp_path):
    plain = _corpus(tmp_path)
    subprocess.run(["lz4", "-q", plain, plain + ".lz4"], check=True)
    with dd.open_lines(plain) as a, dd.open_lines(plain + ".lz4") as b:
        assert list(dd.parse_records(a)) == list(dd.parse_records(b))


@pytest.mark.parametrize(
    "record,line,field",
    [
        ("Description-md5: 00\nDescription-en: Orphan\n text\n", 6, "Package"),
        ("Package: nodesc\nDescription-md5: 00\n", 6, "Description-en"),
    ],
)
def test_malformed_record_names_file_and_line(tmp_path, record, line, field):
    path = _write(tmp_path / "bad", _record_text("good", "Fine", "Text."), record)
    with pytest.raises(
        dd.TranslationFileError, match=r"%s:%d: .*no .*%s" % (re.escape(path), line, field)
    ):
        dd.build(path, str(tmp_path / "out"))
    assert not os.path.exists(tmp_path / "out")


def test_garbage_line_names_file_and_line(tmp_path):
    path = _write(tmp_path / "bad", _record_text("good", "Fine", "Text."), "this is not a field\n")
    with pytest.raises(dd.TranslationFileError, match=r"bad:6: expected 'Field: value'"):
        with dd.open_lines(path) as lines:
            list(dd.parse_records(lines, path))


def test_default_file_prefers_the_release_suite_and_explains_a_miss(tmp_path):
    for suite in ("bookworm-security", "bookworm", "bookworm-updates"):
        (tmp_path / ("deb_dists_%s_main_i18n_Translation-en.lz4" % suite)).touch()
    pattern = str(tmp_path / "*_main_i18n_Translation-en*")
    assert dd.default_translation_file(pattern).endswith("_bookworm_main_i18n_Translation-en.lz4")
    with pytest.raises(dd.TranslationFileError, match="Acquire::Languages::=en"):
        dd.default_translation_file(str(tmp_path / "nothing*"))


def test_shipped_sample_matches_its_readme():
    with open(os.path.join(SAMPLE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    table = dict(re.findall(r"^\| (train|val|test) +\| (\d+) ", readme, re.MULTILINE))
    assert set(table) == set(summarization.SPLITS)
    for split in summarization.SPLITS:
        pairs = _read_split(SAMPLE, split)
        assert len(pairs) == int(table[split]), split
        for article, abstract in pairs:
            assert article and article == article.strip()
            assert re.fullmatch(r"<s> \S.* </s>", abstract), abstract
            assert "<s>" not in abstract[3:-4] and "</s>" not in abstract[3:-4]
    with open(os.path.join(SAMPLE, "vocab"), encoding="utf-8") as f:
        words = [line.split(" ")[0] for line in f]
    assert "<s>" not in words and "</s>" not in words
    assert "vocab has {:,} words".format(len(words)) in readme

"""Builds a small real summarization corpus: Debian package long description -> synopsis.

The input is Debian's ``Translation-en`` index: RFC-822 style records separated by blank
lines, with the fields ``Package``, ``Description-md5`` and ``Description-en``. The first
line of ``Description-en`` is the one-line synopsis; the following lines start with one
space and form the long description, where a line holding only `` .`` separates
paragraphs.

Every record with a non-empty long description gives one pair: the article is the long
description (paragraphs joined by spaces), the abstract is the synopsis. The output is the
layout of See et al.'s ``finished_files/``: ``train.bin``, ``val.bin``, ``test.bin``,
``chunked/{split}_NNN.bin`` (1,000 records each) and ``vocab``.

Rules, in the order they are applied:

1. Records with an empty long description are skipped (counted). Records with an empty
   synopsis are skipped too (counted and logged); records without ``Package`` or
   ``Description-en`` are an error naming the file and line.
2. Deduplication: many packages share one long description (``foo``, ``foo-data``, ...).
   One pair is kept per distinct long-description text (compared after joining the lines
   and paragraphs with single spaces, before tokenisation): the first record in file
   order. Later records with the same text are dropped (counted) whatever their synopsis.
3. Tokenisation: the text is cut into sentences at ``.``, ``!`` or ``?`` followed by
   whitespace and anything but a lowercase letter, except after abbreviations such as
   ``e.g.`` or ``A.D.`` (the Treebank tokenizer assumes one sentence at a time and only
   splits the final period off), lowercased, tokenised with NLTK's
   ``TreebankWordTokenizer`` and joined with single spaces. The abstract is written as
   ``<s> tokens </s>``, one sentence, as See's ``make_datafiles.py`` does.
4. Pairs whose article has more than ``--max_article_tokens`` tokens are dropped (counted).
5. Split by a stable hash of the package name: ``int(sha1(package).hexdigest(), 16) % 100``
   below 90 is train, below 95 val, the rest test. Each split is written in ascending
   hash order; ``--max_{train,val,test}`` keep the pairs with the smallest hashes, so a
   capped split is a prefix of the uncapped one.
6. The vocab is See's: train split only, article plus abstract tokens without ``<s>`` and
   ``</s>``, stripped, empties dropped, ``Counter.most_common(200000)`` as ``word count``.

Every file is written atomically (a temporary file, then ``os.replace``).

Usage::

  python -m data_prep.debian_descriptions --out_dir=finished_files \\
      [--translation_file=/var/lib/apt/lists/..._main_i18n_Translation-en.lz4]
"""

import collections
import contextlib
import dataclasses
import glob
import gzip
import hashlib
import io
import lzma
import os
import re
import shutil
import statistics
import subprocess

from absl import flags, logging

from acvi_tf import config as config_lib
from acvi_tf import errors
from acvi_tf.formats import bin_files, see_vocab
from data_prep import splits as splits_lib
from data_prep.text import tokenize

SPLITS = ("train", "val", "test")
CHUNK_SIZE = 1000
APT_LISTS_GLOB = "/var/lib/apt/lists/*_main_i18n_Translation-en*"
APT_HELPER = "/usr/lib/apt/apt-helper"

_GZIP_MAGIC = b"\x1f\x8b"
_XZ_MAGIC = b"\xfd7zXZ\x00"
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_CHUNK_NAME = re.compile(r"^(train|val|test)_\d{3,}\.bin$")


class TranslationFileError(errors.UserError, ValueError):
    """The Translation-en index cannot be found, read or parsed; the message says why."""


@dataclasses.dataclass(frozen=True)
class Record:
    """One ``Translation-en`` record.

    Attributes:
      package: the ``Package`` field.
      synopsis: the first line of ``Description-en``.
      paragraphs: the long description, one string per paragraph, lines joined by spaces.
      line: the line number where the record starts (1-based).
    """

    package: str
    synopsis: str
    paragraphs: tuple
    line: int

    @property
    def long_description(self):
        """The paragraphs joined by single spaces ('' when there are none)."""
        return " ".join(self.paragraphs)


@dataclasses.dataclass(frozen=True)
class Pair:
    """One tokenised example: See's ``article`` and ``abstract`` strings and its split key.

    Attributes:
      package: the package the pair came from.
      article: the tokenised long description.
      abstract: ``<s> tokenised synopsis </s>``.
      hash_value: ``int(sha1(package).hexdigest(), 16)``.
    """

    package: str
    article: str
    abstract: str
    hash_value: int


@dataclasses.dataclass
class Stats:
    """What the build read, dropped and wrote; ``summary()`` formats it."""

    records_read: int = 0
    skipped_empty: int = 0
    skipped_no_synopsis: int = 0
    duplicates_dropped: int = 0
    too_long_dropped: int = 0
    pairs_before_caps: dict = dataclasses.field(default_factory=dict)
    pairs: dict = dataclasses.field(default_factory=dict)
    median_article_tokens: dict = dataclasses.field(default_factory=dict)
    median_abstract_tokens: dict = dataclasses.field(default_factory=dict)
    vocab_size: int = 0

    def summary(self):
        """A multi-line, human-readable account of the build."""
        lines = [
            "records read:              %d" % self.records_read,
            "skipped, empty long desc.: %d" % self.skipped_empty,
            "skipped, empty synopsis:   %d" % self.skipped_no_synopsis,
            "duplicates dropped:        %d" % self.duplicates_dropped,
            "too long dropped:          %d" % self.too_long_dropped,
        ]
        for split in SPLITS:
            lines.append(
                "%-5s pairs: %d (of %d before the cap); median tokens: article %s, "
                "abstract %s"
                % (
                    split,
                    self.pairs.get(split, 0),
                    self.pairs_before_caps.get(split, 0),
                    self.median_article_tokens.get(split, "-"),
                    self.median_abstract_tokens.get(split, "-"),
                )
            )
        lines.append("vocab size:                %d" % self.vocab_size)
        return "\n".join(lines)


def default_translation_file(pattern=APT_LISTS_GLOB):
    """The ``main`` Translation-en index apt downloaded, preferring the release suite.

    Matches are sorted so that a plain suite (``bookworm``) comes before its
    ``-updates``/``-security`` companions, which only hold the few changed packages.

    Args:
      pattern: the glob to search.

    Returns:
      The path of the first match.

    Raises:
      TranslationFileError: nothing matches.
    """

    def suite_key(path):
        suite = os.path.basename(path).split("_dists_")[-1].split("_main_")[0]
        return ("-" in suite, path)

    matches = sorted(glob.glob(pattern), key=suite_key)
    if not matches:
        raise TranslationFileError(
            "no Translation-en index matches %s; pass --translation_file, or download one "
            "with translations enabled: `apt-get update -o Acquire::Languages::=en` (in "
            "Docker images remove /etc/apt/apt.conf.d/docker-no-languages first, it turns "
            "translations off)" % pattern
        )
    return matches[0]


def _lz4_command(path):
    if shutil.which("lz4"):
        return ["lz4", "-dc", path]
    if os.access(APT_HELPER, os.X_OK):
        return [APT_HELPER, "cat-file", path]
    raise TranslationFileError(
        "%s is lz4-compressed and neither the `lz4` command nor %s is available; install "
        "one (`apt-get install lz4`) or decompress the file yourself" % (path, APT_HELPER)
    )


@contextlib.contextmanager
def _lz4_lines(path):
    command = _lz4_command(path)
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        try:
            yield io.TextIOWrapper(process.stdout, encoding="utf-8")
        except BaseException:
            process.kill()
            raise
        stderr = process.stderr.read().decode("utf-8", "replace").strip()
    if process.returncode != 0:
        raise TranslationFileError(
            "decompressing %s with `%s` failed (exit %d): %s"
            % (path, " ".join(command), process.returncode, stderr)
        )


@contextlib.contextmanager
def open_lines(path):
    """Opens a plain, gzip, xz or lz4 Translation file as UTF-8 text lines.

    The format is recognised by the file's magic bytes, not its name. gzip and xz use the
    standard library; lz4 is piped through ``lz4 -dc`` or ``apt-helper cat-file``.

    Args:
      path: the file.

    Yields:
      A text file object to iterate line by line.

    Raises:
      TranslationFileError: the file is missing or lz4 cannot be decompressed here.
    """
    try:
        with open(path, "rb") as f:
            magic = f.read(len(_XZ_MAGIC))
    except OSError as e:
        raise TranslationFileError("cannot read --translation_file %s: %s" % (path, e)) from e
    if magic.startswith(_LZ4_MAGIC):
        with _lz4_lines(path) as lines:
            yield lines
        return
    if magic.startswith(_GZIP_MAGIC):
        opener = gzip.open
    elif magic.startswith(_XZ_MAGIC):
        opener = lzma.open
    else:
        opener = open
    with opener(path, "rt", encoding="utf-8") as lines:
        yield lines


def _paragraphs(continuation_lines):
    paragraphs, current = [], []
    for line in continuation_lines:
        text = line.strip()
        if text == ".":
            if current:
                paragraphs.append(" ".join(current))
            current = []
        elif text:
            current.append(text)
    if current:
        paragraphs.append(" ".join(current))
    return tuple(paragraphs)


def _record(fields, start, path):
    package = fields.get("Package", [""])[0].strip()
    if not package or "Description-en" not in fields:
        raise TranslationFileError(
            "%s:%d: the record starting on this line has no %s field; is this a Debian "
            "Translation-en index?"
            % (path, start, "Description-en" if package else "(or an empty) Package")
        )
    description = fields["Description-en"]
    return Record(
        package=package,
        synopsis=description[0].strip(),
        paragraphs=_paragraphs(description[1:]),
        line=start,
    )


def parse_records(lines, path="<input>"):
    """Parses the records of a Translation-en index.

    Args:
      lines: an iterable of text lines (with or without their newlines).
      path: the file name used in error messages.

    Yields:
      ``Record`` objects in file order.

    Raises:
      TranslationFileError: a record lacks ``Package`` or ``Description-en``, holds a field
        twice, or a line is neither ``Field: value``, a continuation nor blank; the message
        names the file and the line.
    """
    fields, field, start = {}, None, None
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if not line.strip():
            if fields:
                yield _record(fields, start, path)
            fields, field = {}, None
        elif line[0] in " \t":
            if field is None:
                raise TranslationFileError(
                    "%s:%d: continuation line outside any field: %r" % (path, number, line)
                )
            fields[field].append(line)
        else:
            name, colon, value = line.partition(":")
            if not colon or not name or " " in name:
                raise TranslationFileError(
                    "%s:%d: expected 'Field: value', got %r" % (path, number, line)
                )
            if name in fields:
                raise TranslationFileError(
                    "%s:%d: field %s appears twice in the record starting on line %d"
                    % (path, number, name, start)
                )
            if not fields:
                start = number
            field = name
            fields[name] = [value]
    if fields:
        yield _record(fields, start, path)


def package_hash(package):
    """``int(sha1(package).hexdigest(), 16)``, the stable key of the split and the caps."""
    return int(hashlib.sha1(package.encode("utf-8")).hexdigest(), 16)


def split_of(hash_value):
    """The split of a hash: ``hash % 100`` < 90 train, < 95 val, else test."""
    return splits_lib.split_of(hash_value, SPLITS)


def make_pairs(records, max_article_tokens, stats):
    """Turns records into tokenised pairs: skips empties, deduplicates, drops long ones.

    Args:
      records: ``Record`` objects in file order.
      max_article_tokens: the longest article kept, in tokens.
      stats: a ``Stats`` whose counters are updated.

    Returns:
      A list of ``Pair`` in file order.
    """
    seen, pairs = set(), []
    for record in records:
        stats.records_read += 1
        text = record.long_description
        if not text:
            stats.skipped_empty += 1
            continue
        if not record.synopsis:
            stats.skipped_no_synopsis += 1
            logging.warning(
                "skipping package %s (record on line %d): empty synopsis",
                record.package,
                record.line,
            )
            continue
        if text in seen:
            stats.duplicates_dropped += 1
            continue
        seen.add(text)
        article = tokenize(text)
        if len(article.split(" ")) > max_article_tokens:
            stats.too_long_dropped += 1
            continue
        abstract = "%s %s %s" % (
            see_vocab.SENTENCE_START,
            tokenize(record.synopsis),
            see_vocab.SENTENCE_END,
        )
        pairs.append(Pair(record.package, article, abstract, package_hash(record.package)))
    return pairs


def split_pairs(pairs, caps=None):
    """Splits pairs by hash, each split in ascending hash order and capped (see
    ``data_prep.splits.split_by_hash``)."""
    return splits_lib.split_by_hash(pairs, SPLITS, caps)


def build_vocab(train_pairs):
    """Counts words the way See's ``make_datafiles.py`` does, from the train split only.

    Args:
      train_pairs: the train ``Pair`` objects.

    Returns:
      A ``collections.Counter`` of article and abstract tokens, ``<s>``/``</s>`` excluded.
    """
    counter = collections.Counter()
    for pair in train_pairs:
        abstract_tokens = [
            token
            for token in pair.abstract.split(" ")
            if token not in (see_vocab.SENTENCE_START, see_vocab.SENTENCE_END)
        ]
        tokens = [token.strip() for token in pair.article.split(" ") + abstract_tokens]
        counter.update(token for token in tokens if token)
    return counter


def _write_chunks(chunk_dir, split, pairs):
    written = bin_files.write_chunked(chunk_dir, split, pairs, chunk_size=CHUNK_SIZE)
    keep = {os.path.basename(path) for path in written}
    for name in os.listdir(chunk_dir):
        match = _CHUNK_NAME.match(name)
        if match and match.group(1) == split and name not in keep:
            os.remove(os.path.join(chunk_dir, name))


def write_outputs(out_dir, splits, full_bins=True):
    """Writes See's ``finished_files`` layout for the split pairs.

    Chunks left over from an earlier, larger build of the same split, and with
    ``full_bins=False`` an earlier ``{split}.bin``, are removed, so ``out_dir`` always
    matches this build.

    Args:
      out_dir: the output directory.
      splits: dict split -> list of ``Pair``.
      full_bins: also write ``{split}.bin`` next to ``chunked/``.

    Returns:
      The vocab size.
    """
    chunk_dir = os.path.join(out_dir, "chunked")
    os.makedirs(chunk_dir, exist_ok=True)
    for split in SPLITS:
        examples = [(pair.article, pair.abstract) for pair in splits[split]]
        _write_chunks(chunk_dir, split, examples)
        full_path = os.path.join(out_dir, split + ".bin")
        if full_bins:
            bin_files.write_bin_file(full_path, examples)
        elif os.path.exists(full_path):
            os.remove(full_path)
    return see_vocab.write_vocab(os.path.join(out_dir, "vocab"), build_vocab(splits["train"]))


def _median_tokens(texts, drop=()):
    lengths = [len([t for t in text.split(" ") if t not in drop]) for text in texts]
    return statistics.median(lengths) if lengths else 0


def build(translation_file, out_dir, max_article_tokens=400, caps=None, full_bins=True):
    """Reads a Translation-en index and writes the corpus into ``out_dir``.

    Args:
      translation_file: plain, ``.gz``, ``.xz`` or ``.lz4`` Translation-en file.
      out_dir: the output directory (created if needed).
      max_article_tokens: pairs with longer articles are dropped.
      caps: optional dict split -> the most pairs to keep.
      full_bins: also write ``{split}.bin`` next to ``chunked/``.

    Returns:
      The ``Stats`` of the build.

    Raises:
      TranslationFileError: the file cannot be read or parsed; nothing is written then.
    """
    stats = Stats()
    try:
        with open_lines(translation_file) as lines:
            pairs = make_pairs(parse_records(lines, translation_file), max_article_tokens, stats)
    except UnicodeDecodeError as e:
        raise TranslationFileError(
            "%s is not UTF-8 text (%s); is it a Translation-en index?" % (translation_file, e)
        ) from e
    stats.pairs_before_caps = {split: 0 for split in SPLITS}
    for pair in pairs:
        stats.pairs_before_caps[split_of(pair.hash_value)] += 1
    splits = split_pairs(pairs, caps)
    stats.vocab_size = write_outputs(out_dir, splits, full_bins)
    sentence_marks = (see_vocab.SENTENCE_START, see_vocab.SENTENCE_END)
    for split, members in splits.items():
        stats.pairs[split] = len(members)
        stats.median_article_tokens[split] = _median_tokens(p.article for p in members)
        stats.median_abstract_tokens[split] = _median_tokens(
            (p.abstract for p in members), drop=sentence_marks
        )
    return stats


def define_flags(fv=flags.FLAGS):
    """Defines the command-line flags.

    Called only when the module runs as a program, so that several builders (and their
    tests) can be imported into one process without clashing flags.
    """
    flags.DEFINE_string(
        "translation_file",
        None,
        "Debian Translation-en index (plain, .gz, .xz or .lz4). Default: the first "
        "/var/lib/apt/lists/*_main_i18n_Translation-en* (release suite first).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "out_dir", None, "Directory for train/val/test.bin, chunked/ and vocab.", flag_values=fv
    )
    flags.DEFINE_integer(
        "max_article_tokens",
        400,
        "Drop pairs whose article has more tokens than this.",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_train",
        None,
        "Keep at most this many train pairs (smallest package hashes first). Default: all.",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_val", None, "Like --max_train, for val.", lower_bound=0, flag_values=fv
    )
    flags.DEFINE_integer(
        "max_test", None, "Like --max_train, for test.", lower_bound=0, flag_values=fv
    )
    flags.DEFINE_boolean(
        "full_bins",
        True,
        "Also write train.bin, val.bin and test.bin next "
        "to chunked/ (See's layout); --nofull_bins writes chunked/ only.",
        flag_values=fv,
    )
    flags.mark_flag_as_required("out_dir", flag_values=fv)


def run(config):
    """Builds the corpus from the flags and prints the summary."""
    caps = {"train": config.max_train, "val": config.max_val, "test": config.max_test}
    translation_file = config.translation_file or default_translation_file()
    logging.info("reading %s", translation_file)
    stats = build(
        translation_file, config.out_dir, config.max_article_tokens, caps, config.full_bins
    )
    print("Built %s from %s\n%s" % (config.out_dir, translation_file, stats.summary()))


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

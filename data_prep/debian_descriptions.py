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

The pairs then go through ``data_prep.summarization`` (its rules, with empties skipped
rather than refused): an empty long description or synopsis is skipped (counted), one
pair is kept per distinct long description (the first record in file order), the text
is tokenised with NLTK's Treebank tokenizer sentence by sentence and lowercased (the
synopsis is one abstract sentence), pairs with more than ``--max_article_tokens`` tokens
are dropped, the split is a stable hash of the package name (90% train, 5% val, 5% test;
``--max_{train,val,test}`` keep the smallest hashes) and the vocab is See's, from the
train split. Records without ``Package`` or ``Description-en`` are an error naming the
file and line.

Every file is written atomically (a temporary file, then ``os.replace``).

Usage::

  python -m data_prep.debian_descriptions --out_dir=finished_files \\
      [--translation_file=/var/lib/apt/lists/..._main_i18n_Translation-en.lz4]
"""

import contextlib
import dataclasses
import glob
import gzip
import io
import lzma
import os
import shutil
import subprocess
from typing import IO, Iterable, Iterator, List, Mapping, Optional, Sequence

from absl import flags, logging

from acvi_tf import config as config_lib
from acvi_tf import errors
from acvi_tf.text import tokenizers
from data_prep import splits as splits_lib
from data_prep import summarization

APT_LISTS_GLOB = "/var/lib/apt/lists/*_main_i18n_Translation-en*"
APT_HELPER = "/usr/lib/apt/apt-helper"

_GZIP_MAGIC = b"\x1f\x8b"
_XZ_MAGIC = b"\xfd7zXZ\x00"
_LZ4_MAGIC = b"\x04\x22\x4d\x18"


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
    def long_description(self) -> str:
        """The paragraphs joined by single spaces ('' when there are none)."""
        return " ".join(self.paragraphs)


def default_translation_file(pattern: str = APT_LISTS_GLOB) -> str:
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
def open_lines(path: str) -> Iterator[IO[str]]:
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


def parse_records(lines: Iterable[str], path: str = "<input>") -> Iterator[Record]:
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


def sources(records: Iterable[Record]) -> Iterator[summarization.Source]:
    """The pairs of the records: long description -> synopsis, keyed by package."""
    for record in records:
        yield summarization.Source(
            record.long_description,
            record.synopsis,
            record.package,
            "package %s (record on line %d)" % (record.package, record.line),
        )


def make_pairs(
    records: Iterable[Record], max_article_tokens: int, stats: summarization.Stats
) -> List[summarization.Pair]:
    """Tokenised pairs of the records (``summarization.make_pairs``, empties skipped)."""
    return summarization.make_pairs(
        sources(records),
        tokenizers.batch_tokenizer("treebank"),
        max_article_tokens,
        stats,
        skip_empty=True,
    )


def build(
    translation_file: str,
    out_dir: str,
    max_article_tokens: int = 400,
    caps: Optional[Mapping[str, Optional[int]]] = None,
    full_bins: bool = True,
    allow_empty: Sequence[str] = (),
) -> summarization.Stats:
    """Reads a Translation-en index and writes the corpus into ``out_dir``.

    Args:
      translation_file: plain, ``.gz``, ``.xz`` or ``.lz4`` Translation-en file.
      out_dir: the output directory (created if needed).
      max_article_tokens: pairs with longer articles are dropped.
      caps: optional dict split -> the most pairs to keep.
      full_bins: also write ``{split}.bin`` next to ``chunked/``.
      allow_empty: the splits that may get no pair.

    Returns:
      The ``summarization.Stats`` of the build.

    Raises:
      TranslationFileError: the file cannot be read or parsed; nothing is written then.
      splits.EmptySplitError: a split not in ``allow_empty`` would get no pair; nothing
        is written then.
    """
    stats = summarization.Stats()
    try:
        with open_lines(translation_file) as lines:
            pairs = make_pairs(parse_records(lines, translation_file), max_article_tokens, stats)
    except UnicodeDecodeError as e:
        raise TranslationFileError(
            "%s is not UTF-8 text (%s); is it a Translation-en index?" % (translation_file, e)
        ) from e
    summarization.write_corpus(pairs, out_dir, stats, caps, full_bins, allow_empty)
    summarization.write_corpus_record(out_dir, "treebank", True)
    return stats


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
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
    splits_lib.define_allow_empty(summarization.SPLITS, fv)
    flags.mark_flag_as_required("out_dir", flag_values=fv)


def run(config: config_lib.Config) -> None:
    """Builds the corpus from the flags and prints the summary."""
    caps = {"train": config.max_train, "val": config.max_val, "test": config.max_test}
    translation_file = config.translation_file or default_translation_file()
    logging.info("reading %s", translation_file)
    stats = build(
        translation_file,
        config.out_dir,
        config.max_article_tokens,
        caps,
        config.full_bins,
        config.allow_empty,
    )
    print("Built %s from %s\n%s" % (config.out_dir, translation_file, stats.summary()))


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

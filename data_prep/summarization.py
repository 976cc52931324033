"""Builds a summarization corpus from your own article/abstract pairs.

Reads JSON lines, a TSV or CSV file with a header row, or two aligned text files (one
article, one abstract per line), and writes See et al.'s ``finished_files/`` layout:
``train.bin``, ``val.bin``, ``test.bin``, ``chunked/{split}_NNN.bin`` (1,000 records each)
and ``vocab``, which ``pointer_generator.run_summarization`` trains on. The Debian
descriptions builder is this one with its own reader; the CNN/DailyMail builder keeps
See's reading, tokenisation and URL-list order and writes through ``write_outputs`` and
``write_corpus_record``.

Rules, in the order they are applied:

1. An empty article or abstract is an error naming the file and the line, or with
   ``--skip_empty`` skipped and counted.
2. Deduplication: one pair per distinct article text (before tokenisation), the first
   in file order; later ones are dropped (counted) whatever their abstract.
3. Tokenisation (``--tokenizer``): ``treebank``, NLTK's Treebank tokenizer sentence by
   sentence (``acvi_tf.text.tokenizers.tokenize``), ``ptb``, the Python port of CoreNLP's
   PTBTokenizer the CNN/DailyMail builder uses (``acvi_tf.text.tokenizers.ptb_tokenize``), or
   ``tftext``, the TensorFlow ops an exported model runs (``acvi_tf.text.graph_tokenizer``),
   one graph call per batch of records; lowercased unless ``--nolowercase``. The
   abstract's lines are its sentences, each written as ``<s> tokens </s>`` as See's
   ``make_datafiles.py`` writes highlights.
4. Pairs whose article has more than ``--max_article_tokens`` tokens are dropped
   (counted; 0 keeps every pair: the models truncate anyway).
5. Splits: a record's own split (``--split_field``: ``train``, ``val`` or ``test``), the
   input file's (``--train_input``, ``--val_input``, ``--test_input``), or a stable hash
   of its key (``--id_field``, else the article text): ``int(sha1(key)) % 100`` below
   90 is train, below 95 val, the rest test. Each split is written in ascending hash
   order; ``--max_{train,val,test}`` keep the smallest hashes, so a capped split is a
   prefix of the uncapped one. A split with no pair stops the build before it writes
   anything, unless ``--allow_empty`` names it or its cap is 0.
6. The vocab is See's: train split only, article and abstract tokens without ``<s>`` and
   ``</s>``, ``Counter.most_common(200000)`` as ``word count``.

Every file is written atomically. ``corpus.json`` records the tokenizer and the case, so
that ``pointer_generator.summarize`` tokenises new text the same way. Progress lines
(records done, rate, time left: the first, then at most one every 10 s, and the last)
report the tokenising and the writing.

Usage::

  python -m data_prep.summarization --input=pairs.jsonl --out_dir=finished_files \\
      [--article_field=article --abstract_field=abstract] [--id_field=id]
  python -m data_prep.summarization --input=pairs.tsv --format=tsv --out_dir=...
  python -m data_prep.summarization --input=articles.txt --abstract_input=abstracts.txt \\
      --out_dir=...
"""

import collections
import csv
import dataclasses
import itertools
import json
import os
import re
import statistics
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from absl import flags, logging

from acvi_tf import config as config_lib
from acvi_tf import errors, files
from acvi_tf import progress as progress_lib
from acvi_tf.formats import bin_files, see_vocab
from acvi_tf.text import tokenizers
from data_prep import splits as splits_lib

SPLITS = ("train", "val", "test")
FORMATS = ("jsonl", "tsv", "csv", "lines")
CHUNK_SIZE = 1000
CORPUS_RECORD = "corpus.json"

CHUNK_NAME = re.compile(r"^(train|val|test)_\d{3,}\.bin$")
_EXTENSIONS = {".jsonl": "jsonl", ".json": "jsonl", ".tsv": "tsv", ".csv": "csv"}


class PairsError(errors.UserError, ValueError):
    """An input cannot be read as pairs; the message names the file, the line and the fix."""


@dataclasses.dataclass(frozen=True)
class Source:
    """One raw pair as read.

    Attributes:
      article: the article text.
      abstract: the abstract text; its lines are its sentences.
      key: what the hash split hashes (an id, or the article).
      where: ``file:line`` of the record, for messages.
      split: the record's own split, or None (hash split).
    """

    article: str
    abstract: str
    key: str
    where: str
    split: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Pair:
    """One tokenised example: See's ``article`` and ``abstract`` strings and its split.

    Attributes:
      key: the key the split and the caps are ordered by.
      article: the tokenised article.
      abstract: ``<s> sentence </s>`` per abstract sentence.
      hash_value: ``int(sha1(key).hexdigest(), 16)``.
      split: the record's own split, or None.
    """

    key: str
    article: str
    abstract: str
    hash_value: int
    split: Optional[str] = None


@dataclasses.dataclass
class Stats:
    """What the build read, dropped and wrote; ``summary()`` formats it."""

    records_read: int = 0
    empty_articles_skipped: int = 0
    empty_abstracts_skipped: int = 0
    duplicates_dropped: int = 0
    too_long_dropped: int = 0
    pairs_before_caps: dict = dataclasses.field(default_factory=dict)
    pairs: dict = dataclasses.field(default_factory=dict)
    median_article_tokens: dict = dataclasses.field(default_factory=dict)
    median_abstract_tokens: dict = dataclasses.field(default_factory=dict)
    vocab_size: int = 0

    def summary(self) -> str:
        """A multi-line, human-readable account of the build."""
        lines = [
            "records read:              %d" % self.records_read,
            "skipped, empty article:    %d" % self.empty_articles_skipped,
            "skipped, empty abstract:   %d" % self.empty_abstracts_skipped,
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
                    _number(self.median_article_tokens.get(split, "-")),
                    _number(self.median_abstract_tokens.get(split, "-")),
                )
            )
        lines.append("vocab size:                %d" % self.vocab_size)
        return "\n".join(lines)


# ----------------------------------------------------------------------------- readers


def _lines(path: str) -> Iterator[Tuple[int, str]]:
    """``(number, line)`` of a UTF-8 file, without line endings; a bad byte names its
    line (a missing file is an ``OSError`` naming it)."""
    for number, line in files.utf8_lines(path, PairsError):
        yield number, line.rstrip("\r\n")


def _split_value(value, where: str) -> Optional[str]:
    if value is None or value == "":
        return None
    if value not in SPLITS:
        raise PairsError(
            "%s: split %r is not one of %s; fix the record or leave the split field out"
            % (where, value, ", ".join(SPLITS))
        )
    return value


def read_jsonl(
    path: str,
    article_field: str,
    abstract_field: str,
    id_field: Optional[str] = None,
    split_field: Optional[str] = None,
) -> Iterator[Source]:
    """``Source`` pairs of a JSON-lines file: one object per line (blank lines skipped).

    Raises:
      PairsError: a line is not a JSON object, lacks a field or has a non-string value.
    """
    for number, line in _lines(path):
        if not line.strip():
            continue
        where = "%s:%d" % (path, number)
        try:
            record = json.loads(line)
        except ValueError as e:
            raise PairsError("%s: not a JSON object (%s); one object per line" % (where, e))
        if not isinstance(record, dict):
            raise PairsError("%s: a JSON %s, not an object" % (where, type(record).__name__))
        yield _source(record, where, article_field, abstract_field, id_field, split_field)


def read_table(
    path: str,
    delimiter: str,
    article_field: str,
    abstract_field: str,
    id_field: Optional[str] = None,
    split_field: Optional[str] = None,
) -> Iterator[Source]:
    """``Source`` pairs of a TSV or CSV file whose first row names the columns.

    Raises:
      PairsError: a named column is missing, or a row has another number of cells than
        the header.
    """
    rows = _lines(path)
    try:
        number, header_line = next(rows)
    except StopIteration:
        raise PairsError("%s is empty; the first row must name the columns" % path) from None
    header = next(csv.reader([header_line], delimiter=delimiter))
    numbered = ((n, line) for n, line in rows)
    for number, line in _logical_rows(numbered, delimiter):
        where = "%s:%d" % (path, number)
        cells = next(csv.reader([line], delimiter=delimiter)) if line else []
        if not any(cells):
            continue
        if len(cells) != len(header):
            raise PairsError(
                "%s: %d cells, but the header has %d (%s); quote cells that hold the "
                "delimiter" % (where, len(cells), len(header), ", ".join(header))
            )
        yield _source(
            dict(zip(header, cells)), where, article_field, abstract_field, id_field, split_field
        )


def _logical_rows(numbered, delimiter):
    """Physical lines joined into CSV rows (a quoted cell may hold newlines)."""
    pending, start = None, None
    for number, line in numbered:
        if pending is None:
            pending, start = line, number
        else:
            pending += "\n" + line
        if delimiter == "\t" or pending.count('"') % 2 == 0:
            yield start, pending
            pending = None
    if pending is not None:
        yield start, pending


def read_aligned(article_path: str, abstract_path: str) -> Iterator[Source]:
    """``Source`` pairs of two aligned files: line i of each is one pair.

    Raises:
      PairsError: the files have other numbers of lines.
    """
    articles = list(_lines(article_path))
    abstracts = list(_lines(abstract_path))
    if len(articles) != len(abstracts):
        raise PairsError(
            "%s has %d lines but %s has %d; the files must be aligned, one pair per line"
            % (article_path, len(articles), abstract_path, len(abstracts))
        )
    for (number, article), (_, abstract) in zip(articles, abstracts):
        yield Source(article, abstract, article, "%s:%d" % (article_path, number))


def _source(record, where, article_field, abstract_field, id_field, split_field):
    values = {}
    for name in (article_field, abstract_field, id_field, split_field):
        if name is None:
            continue
        if name not in record:
            raise PairsError(
                "%s: no field %r (the record has %s); name the right one with "
                "--article_field, --abstract_field, --id_field or --split_field"
                % (where, name, ", ".join(repr(k) for k in record) or "none")
            )
        value = record[name]
        if not isinstance(value, str):
            raise PairsError(
                "%s: field %r is a %s, not a string" % (where, name, type(value).__name__)
            )
        values[name] = value
    article = values[article_field]
    return Source(
        article,
        values[abstract_field],
        values[id_field] if id_field else article,
        where,
        _split_value(values.get(split_field), where),
    )


# ----------------------------------------------------------------------------- pairs


def make_pairs(
    sources: Iterable[Source],
    tokenize: Callable[[Sequence[str]], List[str]],
    max_article_tokens: int,
    stats: Stats,
    skip_empty: bool = False,
) -> List[Pair]:
    """Turns sources into tokenised pairs: empties, duplicates and long articles out.

    The sources are read first; then ``splits_lib.TOKENIZE_BATCH`` of them at a time are checked
    and their texts tokenised in one ``tokenize`` call, with a progress line.

    Args:
      sources: ``Source`` objects in file order.
      tokenize: ``texts -> their tokens`` (``acvi_tf.text.tokenizers.batch_tokenizer``).
      max_article_tokens: the longest article kept, in tokens (0: every one).
      stats: a ``Stats`` whose counters are updated.
      skip_empty: skip (and count) an empty article or abstract instead of refusing it.

    Returns:
      A list of ``Pair`` in file order.

    Raises:
      PairsError: an empty article or abstract without ``skip_empty``.
    """
    sources = list(sources)
    progress = progress_lib.Progress(len(sources), "tokenised records")
    seen, pairs = set(), []
    for start in range(0, len(sources), splits_lib.TOKENIZE_BATCH):
        batch = sources[start : start + splits_lib.TOKENIZE_BATCH]
        texts = [_texts(source, seen, stats, skip_empty) for source in batch]
        pairs += _tokenised_pairs([t for t in texts if t], tokenize, max_article_tokens, stats)
        progress(start + len(batch))
    return pairs


def _texts(source, seen, stats, skip_empty):
    """``(source, article, abstract sentences)``, stripped; None for an empty side (with
    ``skip_empty``) or an article in ``seen``, counted in ``stats``."""
    stats.records_read += 1
    article = source.article.strip()
    sentences = [line.strip() for line in source.abstract.split("\n") if line.strip()]
    empty = "article" if not article else "abstract" if not sentences else None
    if empty:
        if not skip_empty:
            raise PairsError(
                "%s: empty %s; remove the record or pass --skip_empty" % (source.where, empty)
            )
        if empty == "article":
            stats.empty_articles_skipped += 1
        else:
            stats.empty_abstracts_skipped += 1
            logging.warning("skipping %s: empty abstract", source.where)
        return None
    if article in seen:
        stats.duplicates_dropped += 1
        return None
    seen.add(article)
    return source, article, sentences


def _tokenised_pairs(texts, tokenize, max_article_tokens, stats):
    """The ``Pair`` of each of ``_texts``' triples, tokenised in one ``tokenize`` call;
    too long articles dropped and counted."""
    tokens = iter(tokenize([text for _, article, lines in texts for text in [article, *lines]]))
    pairs = []
    for source, _, sentences in texts:
        article = next(tokens)
        abstract = " ".join(
            "%s %s %s" % (see_vocab.SENTENCE_START, next(tokens), see_vocab.SENTENCE_END)
            for _ in sentences
        )
        if max_article_tokens and len(article.split(" ")) > max_article_tokens:
            stats.too_long_dropped += 1
            continue
        pairs.append(
            Pair(source.key, article, abstract, splits_lib.key_hash(source.key), source.split)
        )
    return pairs


def split_pairs(pairs: List[Pair], caps: Optional[Dict[str, int]] = None) -> Dict[str, List[Pair]]:
    """Each pair in its own split or its hash's, each split in ascending hash order and
    capped (``data_prep.splits.split_by_hash``)."""
    hashed = splits_lib.split_by_hash([p for p in pairs if p.split is None], SPLITS, caps)
    for split in SPLITS:
        given = sorted((p for p in pairs if p.split == split), key=lambda p: p.hash_value)
        merged = sorted(hashed[split] + given, key=lambda p: p.hash_value)
        cap = (caps or {}).get(split)
        hashed[split] = merged[:cap] if cap is not None else merged
    return hashed


def count_words(counter: collections.Counter, pair: Pair) -> None:
    """Adds one pair's words to ``counter`` the way See's ``make_datafiles.py`` counts
    them: article and abstract tokens, ``<s>``/``</s>`` and empty tokens excluded."""
    marks = (see_vocab.SENTENCE_START, see_vocab.SENTENCE_END)
    abstract_tokens = [token for token in pair.abstract.split(" ") if token not in marks]
    tokens = [token.strip() for token in pair.article.split(" ") + abstract_tokens]
    counter.update(token for token in tokens if token)


def write_chunks(
    records: Iterable[Tuple[str, str]], chunk_dir: str, split: str, chunk_size: int = CHUNK_SIZE
) -> List[str]:
    """Writes ``(article, abstract)`` records as ``{split}_000.bin``, ``{split}_001.bin``, ...

    The records are streamed, ``chunk_size`` at a time, with the file names of
    ``bin_files.write_chunked``; chunks of ``split`` left from an earlier, larger build
    are removed.

    Args:
      records: the split's records in order (``bin_files.read_bin_file`` of a full
        ``.bin`` file, for one).
      chunk_dir: the ``chunked`` directory (created if needed).
      split: ``train``, ``val`` or ``test``.
      chunk_size: records per chunk (See's 1,000).

    Returns:
      The chunk paths written, in order.
    """
    os.makedirs(chunk_dir, exist_ok=True)
    records = iter(records)
    paths = []
    for index in itertools.count():
        chunk = list(itertools.islice(records, chunk_size))
        if not chunk:
            break
        path = os.path.join(chunk_dir, "%s_%03d.bin" % (split, index))
        bin_files.write_bin_file(path, chunk)
        paths.append(path)
    keep = {os.path.basename(path) for path in paths}
    for name in os.listdir(chunk_dir):
        match = CHUNK_NAME.match(name)
        if match and match.group(1) == split and name not in keep:
            os.remove(os.path.join(chunk_dir, name))
    return paths


@dataclasses.dataclass
class Written:
    """What ``write_outputs`` wrote: records and chunk files per split, vocab lines."""

    records: dict = dataclasses.field(default_factory=dict)
    chunks: dict = dataclasses.field(default_factory=dict)
    vocab_size: int = 0


def _examples(pairs, split, written, counter, progress):
    """``(article, abstract)`` of ``pairs``, counted into ``written`` and, when given,
    their words into ``counter``; ``progress``, when given, is told the records of every
    split so far."""
    written.records[split] = 0
    for pair in pairs:
        written.records[split] += 1
        if counter is not None:
            count_words(counter, pair)
        yield pair.article, pair.abstract
        if progress:
            progress(sum(written.records.values()))


def write_outputs(
    out_dir: str,
    splits: Dict[str, Iterable[Pair]],
    full_bins: bool = True,
    vocab_size: int = see_vocab.VOCAB_SIZE,
    progress: Optional[Callable[[int], None]] = None,
) -> Written:
    """Writes See's ``finished_files`` layout, streaming each split's pairs.

    Chunks left over from an earlier, larger build of the same split, and with
    ``full_bins=False`` an earlier ``{split}.bin``, are removed, so ``out_dir`` always
    matches this build.

    Args:
      out_dir: the output folder (created if needed).
      splits: ``{split: pairs}`` for train, val and test, written in the dict's order,
        each split's pairs in theirs (an iterator is consumed once).
      full_bins: also write ``{split}.bin``; the chunks are then cut from it.
      vocab_size: the most vocab lines written (See's 200,000).
      progress: told the number of records written so far, after each one (e.g. an
        ``acvi_tf.progress.Progress``; None: nothing is told).

    Returns:
      The ``Written`` counts.
    """
    chunk_dir = os.path.join(out_dir, "chunked")
    os.makedirs(chunk_dir, exist_ok=True)
    counter = collections.Counter()
    written = Written()
    for split, pairs in splits.items():
        examples = _examples(pairs, split, written, counter if split == "train" else None, progress)
        full_path = os.path.join(out_dir, split + ".bin")
        if full_bins:
            bin_files.write_bin_file(full_path, examples)
            examples = bin_files.read_bin_file(full_path)
        elif os.path.exists(full_path):
            os.remove(full_path)
        written.chunks[split] = len(write_chunks(examples, chunk_dir, split, CHUNK_SIZE))
    written.vocab_size = see_vocab.write_vocab(os.path.join(out_dir, "vocab"), counter, vocab_size)
    return written


def _number(value):
    """A median as people write it: ``46`` and ``43.5``, not ``46`` beside ``43.0``."""
    return "%g" % value if isinstance(value, (int, float)) else value


def _median_tokens(texts, drop=()):
    lengths = [len([t for t in text.split(" ") if t not in drop]) for text in texts]
    return statistics.median(lengths) if lengths else 0


def write_corpus(
    pairs: List[Pair],
    out_dir: str,
    stats: Stats,
    caps: Optional[Dict[str, int]] = None,
    full_bins: bool = True,
    allow_empty: Sequence[str] = (),
) -> Stats:
    """Splits ``pairs``, writes ``finished_files`` into ``out_dir`` and completes ``stats``.

    Raises:
      splits_lib.EmptySplitError: a split not in ``allow_empty`` nor capped to 0 would
        get no pair; nothing is written then.
    """
    stats.pairs_before_caps = {split: 0 for split in SPLITS}
    for pair in pairs:
        stats.pairs_before_caps[pair.split or splits_lib.split_of(pair.hash_value, SPLITS)] += 1
    splits = split_pairs(pairs, caps)
    splits_lib.require_records({s: len(m) for s, m in splits.items()}, allow_empty, caps)
    progress = progress_lib.Progress(sum(map(len, splits.values())), "wrote records")
    stats.vocab_size = write_outputs(out_dir, splits, full_bins, progress=progress).vocab_size
    marks = (see_vocab.SENTENCE_START, see_vocab.SENTENCE_END)
    for split, members in splits.items():
        stats.pairs[split] = len(members)
        stats.median_article_tokens[split] = _median_tokens(p.article for p in members)
        stats.median_abstract_tokens[split] = _median_tokens(
            (p.abstract for p in members), drop=marks
        )
    return stats


def write_corpus_record(out_dir: str, tokenizer_name: str, lowercase: bool) -> None:
    """``corpus.json``: how the corpus was tokenised, for tokenising new text alike."""
    files.atomic_write_text(
        os.path.join(out_dir, CORPUS_RECORD),
        json.dumps(dict(tokenizer=tokenizer_name, lowercase=lowercase), indent=1) + "\n",
    )


# ----------------------------------------------------------------------------- command


def input_format(path: str, given: Optional[str]) -> str:
    """``--format``, else the one the file name's extension implies."""
    if given:
        return given
    extension = os.path.splitext(path)[1].lower()
    if extension not in _EXTENSIONS:
        raise PairsError(
            "cannot tell the format of %s from its name; pass --format=%s"
            % (path, "|".join(FORMATS))
        )
    return _EXTENSIONS[extension]


# What a record of each input format is, for the message of a file that holds none.
_HOLDS = {"jsonl": "one JSON object line", "lines": "one line"}


def read_sources(config: config_lib.Config) -> Iterator[Source]:
    """The ``Source`` pairs the flags name, split by input file where given."""
    inputs = [(config.input, None)] if config.input else []
    inputs += [(config[split + "_input"], split) for split in SPLITS if config[split + "_input"]]
    if not inputs:
        raise PairsError("give --input, or --train_input (with --val_input, --test_input)")
    for path, split in inputs:
        fmt = "lines" if config.abstract_input else input_format(path, config.format)
        if fmt == "lines":
            if not config.abstract_input:
                raise PairsError("--format=lines needs --abstract_input, the aligned abstracts")
            sources = read_aligned(path, config.abstract_input)
        elif fmt == "jsonl":
            sources = read_jsonl(
                path,
                config.article_field,
                config.abstract_field,
                config.id_field,
                config.split_field,
            )
        else:
            sources = read_table(
                path,
                "\t" if fmt == "tsv" else ",",
                config.article_field,
                config.abstract_field,
                config.id_field,
                config.split_field,
            )
        holds = _HOLDS.get(fmt, "one row under its header")
        for source in splits_lib.from_input(sources, path, holds, split, config.allow_empty):
            yield dataclasses.replace(source, split=split) if split else source


def build(config: config_lib.Config) -> Stats:
    """Reads the flags' inputs and writes the corpus into ``--out_dir``."""
    with splits_lib.start_build(config.out_dir, CORPUS_RECORD, config.overwrite):
        stats = Stats()
        pairs = make_pairs(
            read_sources(config),
            tokenizers.batch_tokenizer(config.tokenizer, config.lowercase),
            config.max_article_tokens,
            stats,
            config.skip_empty,
        )
        caps = {split: config["max_" + split] for split in SPLITS}
        write_corpus(pairs, config.out_dir, stats, caps, config.full_bins, config.allow_empty)
        write_corpus_record(config.out_dir, config.tokenizer, config.lowercase)
    return stats


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    flags.DEFINE_string(
        "input", None, "The pairs: JSON lines, TSV, CSV, or articles.", flag_values=fv
    )
    for split in SPLITS:
        flags.DEFINE_string(
            split + "_input",
            None,
            "Pairs that all go to %s (instead of a split)." % split,
            flag_values=fv,
        )
    flags.DEFINE_string(
        "abstract_input",
        None,
        "Aligned abstracts, one per line (the inputs are articles).",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "format", None, list(FORMATS), "Input format (default: by extension).", flag_values=fv
    )
    flags.DEFINE_string(
        "article_field", "article", "JSON key or column of the article.", flag_values=fv
    )
    flags.DEFINE_string(
        "abstract_field", "abstract", "JSON key or column of the abstract.", flag_values=fv
    )
    flags.DEFINE_string(
        "id_field",
        None,
        "JSON key or column the hash split hashes (default: the article).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "split_field", None, "JSON key or column holding train, val or test.", flag_values=fv
    )
    flags.DEFINE_string(
        "out_dir", None, "Directory for train/val/test.bin, chunked/ and vocab.", flag_values=fv
    )
    tokenizers.define_flags(fv)
    flags.DEFINE_integer(
        "max_article_tokens",
        0,
        "Drop pairs with longer articles (0: keep all).",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "skip_empty", False, "Skip pairs with an empty side instead of stopping.", flag_values=fv
    )
    for split in SPLITS:
        flags.DEFINE_integer(
            "max_" + split,
            None,
            "Keep at most this many %s pairs (smallest hashes first)." % split,
            lower_bound=0,
            flag_values=fv,
        )
    flags.DEFINE_boolean(
        "full_bins", True, "Also write {train,val,test}.bin next to chunked/.", flag_values=fv
    )
    splits_lib.define_allow_empty(SPLITS, fv)
    splits_lib.define_overwrite(fv)
    flags.mark_flag_as_required("out_dir", flag_values=fv)


def run(config: config_lib.Config) -> Stats:
    """Builds the corpus and prints the summary."""
    stats = build(config)
    print("Built %s\n%s" % (config.out_dir, stats.summary()))
    return stats


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

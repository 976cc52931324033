"""Builds a translation corpus from your own parallel text, for any language pair.

Reads one TSV file whose header names the two languages' columns, or aligned text files
``PREFIX.<src>`` and ``PREFIX.<tgt>`` (line k of one translated by line k of the other),
and writes tensorflow/nmt's files: ``{train,dev,test}.{src,tgt}``, one tokenised sentence
per line, ``vocab.{src,tgt}`` and, with ``--bpe_merges``, ``bpe/`` (the same splits after
joint BPE, its ``codes`` and its own vocabularies), which ``nmt.run_nmt`` trains on
(``--subword_option=bpe`` for ``bpe/``). The Debian translations builder is this one with
its own reader.

Rules, in the order they are applied:

1. An empty side is an error naming the file and the line, or with ``--skip_empty``
   dropped and counted.
2. Tokenisation (``--tokenizer``): ``treebank`` (NLTK's Treebank tokenizer sentence by
   sentence), ``ptb`` (the Python PTBTokenizer) or ``tftext`` (the TensorFlow ops an
   exported translator runs, one graph call per batch of pairs), lowercased unless
   ``--nolowercase``.
   The tokenizers split every ``@`` off as a token of its own, so the BPE separator
   ``@@`` never occurs in the text.
3. Deduplication: one pair per distinct tokenised pair, the first in file order.
4. Pairs with more than ``--max_len`` tokens on either side are dropped (counted; 0
   keeps every pair).
5. Splits: the input's own (``--train_input`` etc., ``--train_prefix`` etc.), or a
   stable hash of the source sentence (or of a reader's key): ``int(sha1(key)) % 100``
   below 90 is train, below 95 dev, the rest test; each split in ascending hash order,
   ``--max_{train,dev,test}`` keeping its first pairs. A split with no pair stops the
   build before it writes anything, unless ``--allow_empty`` names it or its cap is 0.

With ``--keep_eval_splits`` the pairs of the inputs' own dev and test splits (an official
test set, such as WMT's) skip rules 1, 3 and 4 and the hash order of rule 5: every line
is kept, in file order (a pair with an empty side as empty lines), so the written dev and
test files have the inputs' line counts (less only what ``--max_dev`` and ``--max_test``
cut) and line k stays line k. They neither join nor feed the deduplication of the other
pairs.
6. Vocab files: ``<unk>``, ``<s>``, ``</s>``, then every token of that language's train
   file seen at least ``--min_count`` times, most frequent first, ties in code-point
   order.
7. BPE (``--bpe_merges`` > 0): one joint set of merges learned with ``subword_nmt`` on
   both train files, applied to every split; the BPE vocabularies list every unit of the
   BPE'd train files (``--min_count`` does not apply there).

Every file is written atomically. ``corpus.json`` records the languages, the tokenizer,
the case and whether there is BPE. Progress lines (the first, then at most one every
10 s, and the last) report the tokenising, the learning of the BPE merges and their
application.

Usage::

  python -m data_prep.translation --src=en --tgt=it --input=pairs.tsv --out_dir=en_it
  python -m data_prep.translation --src=en --tgt=it --input_prefix=raw/all --out_dir=en_it
  python -m data_prep.translation --src=en --tgt=it --train_prefix=raw/train \\
      --dev_prefix=raw/dev --test_prefix=raw/test --bpe_merges=8000 --out_dir=en_it
"""

import collections
import contextlib
import csv
import dataclasses
import io
import itertools
import json
import os
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence

from absl import flags, logging
from subword_nmt import learn_bpe as learn_bpe_lib
from subword_nmt.apply_bpe import BPE

from acvi_tf import config as config_lib
from acvi_tf import errors, files
from acvi_tf import progress as progress_lib
from acvi_tf.formats import bpe as bpe_lib
from acvi_tf.formats import nmt_text
from acvi_tf.text import tokenizers
from data_prep import splits as splits_lib

SPLITS = ("train", "dev", "test")
EVAL_SPLITS = ("dev", "test")
BPE_DIR = "bpe"
CORPUS_RECORD = "corpus.json"


class ParallelError(errors.UserError, ValueError):
    """An input cannot be read as parallel text; the message names the file and line."""


@dataclasses.dataclass(frozen=True)
class Source:
    """One raw pair as read: source and target text, split key, where, own split."""

    src: str
    tgt: str
    key: str
    where: str
    split: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Pair:
    """One tokenised pair, its split key's hash and its own split (or None)."""

    key: str
    src: str
    tgt: str
    hash_value: int
    split: Optional[str] = None


@dataclasses.dataclass
class Stats:
    """What the build read, dropped and wrote; ``summary()`` formats it."""

    languages: tuple = ("src", "tgt")
    candidate_pairs: int = 0
    empty_dropped: int = 0
    duplicates_dropped: int = 0
    too_long_dropped: int = 0
    pairs_before_caps: dict = dataclasses.field(default_factory=dict)
    pairs: dict = dataclasses.field(default_factory=dict)
    vocab_size: dict = dataclasses.field(default_factory=dict)
    bpe_merges: int = 0
    bpe_vocab_size: dict = dataclasses.field(default_factory=dict)

    def summary(self) -> str:
        """A multi-line, human-readable account of the build."""
        src, tgt = self.languages
        lines = [
            "candidate pairs: %d; dropped: %d empty, %d duplicate, %d too long"
            % (
                self.candidate_pairs,
                self.empty_dropped,
                self.duplicates_dropped,
                self.too_long_dropped,
            )
        ]
        for split in SPLITS:
            lines.append(
                "%-5s pairs: %d (of %d before the cap)"
                % (split, self.pairs.get(split, 0), self.pairs_before_caps.get(split, 0))
            )
        lines.append(
            "vocab: %s %d, %s %d (with the 3 special tokens)"
            % (src, self.vocab_size.get(src, 0), tgt, self.vocab_size.get(tgt, 0))
        )
        if self.bpe_merges:  # a word-level build has no BPE line
            lines.append(
                "bpe: %d merges; vocab %s %d, %s %d"
                % (
                    self.bpe_merges,
                    src,
                    self.bpe_vocab_size.get(src, 0),
                    tgt,
                    self.bpe_vocab_size.get(tgt, 0),
                )
            )
        return "\n".join(lines)


# ----------------------------------------------------------------------------- readers


def read_tsv(path: str, src: str, tgt: str) -> Iterator[Source]:
    """Pairs of a TSV file whose header row names the ``src`` and ``tgt`` columns.

    Raises:
      ParallelError: a column is missing or a row has another number of cells.
    """
    rows = files.utf8_lines(path, ParallelError)
    try:
        _, header_line = next(rows)
    except StopIteration:
        raise ParallelError("%s is empty; the first row must name the columns" % path) from None
    header = next(csv.reader([header_line.rstrip("\r\n")], delimiter="\t"))
    for name in (src, tgt):
        if name not in header:
            raise ParallelError(
                "%s:1: no column %r (the header has %s); name the columns after --src and "
                "--tgt" % (path, name, ", ".join(repr(h) for h in header))
            )
    for number, line in rows:
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        cells = line.split("\t")
        where = "%s:%d" % (path, number)
        if len(cells) != len(header):
            raise ParallelError(
                "%s: %d cells, but the header has %d (%s); give each pair one line, its two "
                "sentences separated by one tab"
                % (where, len(cells), len(header), ", ".join(header))
            )
        row = dict(zip(header, cells))
        yield Source(row[src], row[tgt], row[src], where)


def read_aligned(prefix: str, src: str, tgt: str) -> Iterator[Source]:
    """Pairs of ``prefix.src`` and ``prefix.tgt``, line by line.

    Raises:
      ParallelError: the files have other numbers of lines.
    """
    try:
        pairs = nmt_text.read_parallel("%s.%s" % (prefix, src), "%s.%s" % (prefix, tgt))
    except nmt_text.NmtDataError as e:
        raise ParallelError(str(e)) from e
    for number, (source, target) in enumerate(pairs, start=1):
        yield Source(source, target, source, "%s.%s:%d" % (prefix, src, number))


# ----------------------------------------------------------------------------- pairs


def make_pairs(
    sources: Iterable[Source],
    tokenize: Callable[[Sequence[str]], List[str]],
    max_len: int,
    stats: Stats,
    skip_empty: bool = False,
    keep_splits: Sequence[str] = (),
) -> List[Pair]:
    """Tokenises, deduplicates and filters the pairs.

    The sources are read first; then both sides of ``splits_lib.TOKENIZE_BATCH`` of
    them at a time are tokenised in one ``tokenize`` call, with a progress line.

    Args:
      sources: ``Source`` objects in file order.
      tokenize: ``texts -> their tokens`` (``acvi_tf.text.tokenizers.batch_tokenizer``).
      max_len: the most tokens kept on either side (0: no limit).
      stats: a ``Stats`` whose counters are updated.
      skip_empty: drop (and count) a pair with an empty side instead of refusing it.
      keep_splits: the own splits whose pairs are all kept: no empty check,
        deduplication or length limit.

    Returns:
      A list of ``Pair`` in file order.

    Raises:
      ParallelError: a pair with an empty side without ``skip_empty``.
    """
    sources = list(sources)
    progress = progress_lib.Progress(len(sources), "tokenised pairs")
    seen, pairs = set(), []
    for start in range(0, len(sources), splits_lib.TOKENIZE_BATCH):
        batch = sources[start : start + splits_lib.TOKENIZE_BATCH]
        tokens = tokenize([source.src for source in batch] + [source.tgt for source in batch])
        for source, pair_tokens in zip(batch, zip(tokens[: len(batch)], tokens[len(batch) :])):
            pair = _kept(source, pair_tokens, seen, stats, max_len, skip_empty, keep_splits)
            if pair:
                pairs.append(pair)
        progress(start + len(batch))
    return pairs


def _kept(source, tokens, seen, stats, max_len, skip_empty, keep_splits):
    """The ``Pair`` of ``source`` and its ``(src, tgt)`` tokens, or None when it is
    dropped (counted in ``stats``); ``make_pairs`` has the rules."""
    stats.candidate_pairs += 1
    if source.split is not None and source.split in keep_splits:
        return _pair(source, tokens)
    if not all(tokens):
        if not skip_empty:
            raise ParallelError(
                "%s: empty %s side; remove the pair or pass --skip_empty"
                % (source.where, "source" if not tokens[0] else "target")
            )
        stats.empty_dropped += 1
        return None
    if tokens in seen:
        stats.duplicates_dropped += 1
        return None
    seen.add(tokens)
    if max_len and max(len(side.split(" ")) for side in tokens) > max_len:
        stats.too_long_dropped += 1
        return None
    return _pair(source, tokens)


def _pair(source: Source, tokens) -> Pair:
    return Pair(source.key, tokens[0], tokens[1], splits_lib.key_hash(source.key), source.split)


def split_pairs(
    pairs: List[Pair],
    caps: Optional[Dict[str, int]] = None,
    keep_splits: Sequence[str] = (),
) -> Dict[str, List[Pair]]:
    """Each pair in its own split or its hash's, in ascending hash order (ties in file
    order; the splits of ``keep_splits`` stay in file order), each split capped to its
    first pairs."""
    splits = {split: [] for split in SPLITS}
    for pair in pairs:
        splits[pair.split or splits_lib.split_of(pair.hash_value, SPLITS)].append(pair)
    for split, members in splits.items():
        if split not in keep_splits:
            members.sort(key=lambda pair: pair.hash_value)
        if (caps or {}).get(split) is not None:
            del members[caps[split] :]
    return splits


def vocab_tokens(lines: Iterable[str], min_count: int = 1) -> List[str]:
    """The vocab entries after the special tokens: tokens seen at least ``min_count``
    times, most frequent first, ties in code-point order."""
    counter = collections.Counter(token for line in lines for token in line.split())
    kept = [
        (token, count)
        for token, count in counter.items()
        if count >= min_count and token not in nmt_text.SPECIALS
    ]
    return [token for token, _ in sorted(kept, key=lambda item: (-item[1], item[0]))]


def write_lines(path: str, lines: Iterable[str]) -> None:
    """Writes ``lines``, one per line, atomically."""
    files.atomic_write_text(path, "".join(line + "\n" for line in lines))


def write_text_corpus(
    out_dir: str,
    texts: Mapping[str, Mapping[str, Sequence[str]]],
    languages: Sequence[str],
    min_count: int = 1,
) -> Dict[str, int]:
    """Writes ``{split}.{lang}`` and ``vocab.{lang}`` for ``texts[split][lang]``; returns
    the number of vocab lines of each language."""
    os.makedirs(out_dir, exist_ok=True)
    for split in SPLITS:
        for lang in languages:
            write_lines(os.path.join(out_dir, "%s.%s" % (split, lang)), texts[split][lang])
    return {
        lang: nmt_text.write_vocab(
            os.path.join(out_dir, "vocab." + lang), vocab_tokens(texts["train"][lang], min_count)
        )
        for lang in languages
    }


class _Codes(io.StringIO):
    """A codes file that ``learn_bpe`` writes into, with progress lines over the merges it
    adds from the second on: their clock starts at the first merge, so that the rate and
    the time left leave out the counting of words and pairs before it (the first merges,
    which touch the most words, are the slowest)."""

    def __init__(self, total: int):
        super().__init__()
        self._total = total
        self._progress = None
        self.merges = 0

    def write(self, text: str) -> int:
        """Writes ``text``; a merge line (not the ``#version`` header) counts."""
        if not text.startswith("#version"):
            self.merges += 1
            if self._progress is None:
                self._progress = progress_lib.Progress(self._total, "learned BPE merges")
            else:
                self._progress(self.merges)
        return super().write(text)


@contextlib.contextmanager
def _without_progress_bar():
    """subword-nmt's ``learn_bpe`` without its tqdm bar and its own line on standard
    error when it runs out of pairs: the build logs its own lines."""
    bar = learn_bpe_lib.tqdm
    learn_bpe_lib.tqdm = lambda iterable, *args, **kwargs: iterable
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        learn_bpe_lib.tqdm = bar


def learn_joint_bpe(lines: Sequence[str], merges: int) -> str:
    """The text of a codes file: ``merges`` operations learned on ``lines`` (fewer when
    no pair occurs twice), with progress lines."""
    logging.info("learning %d BPE merges: counting the words of %d lines", merges, len(lines))
    codes = _Codes(merges)
    with _without_progress_bar():
        learn_bpe_lib.learn_bpe(io.StringIO("".join(line + "\n" for line in lines)), codes, merges)
    if codes.merges < merges:
        logging.info("learned %d BPE merges: no other pair occurs twice", codes.merges)
    return codes.getvalue()


def apply_bpe(
    codes: str, texts: Mapping[str, Mapping[str, Sequence[str]]]
) -> Dict[str, Dict[str, List[str]]]:
    """``texts[split][lang]`` segmented with the BPE ``codes`` (units joined by ``@@ ``),
    with progress lines."""
    bpe = BPE(io.StringIO(codes), separator=bpe_lib.SEPARATOR)
    progress = progress_lib.Progress(
        sum(len(lines) for by_lang in texts.values() for lines in by_lang.values()),
        "segmented lines",
    )
    done = itertools.count(1)

    def segment(line):
        segmented = bpe.process_line(line)
        progress(next(done))
        return segmented

    return {
        split: {lang: [segment(line) for line in lines] for lang, lines in by_lang.items()}
        for split, by_lang in texts.items()
    }


def write_corpus(
    pairs: List[Pair],
    out_dir: str,
    languages: Sequence[str],
    stats: Stats,
    caps: Optional[Dict[str, int]] = None,
    min_count: int = 1,
    bpe_merges: int = 0,
    keep_splits: Sequence[str] = (),
    allow_empty: Sequence[str] = (),
) -> Stats:
    """Splits ``pairs`` and writes the word-level corpus (and its BPE variant); the
    splits of ``keep_splits`` keep their file order.

    Raises:
      splits_lib.EmptySplitError: a split not in ``allow_empty`` nor capped to 0 would
        get no pair; nothing is written then.
    """
    src, tgt = languages
    stats.languages = (src, tgt)
    stats.pairs_before_caps = collections.Counter(
        p.split or splits_lib.split_of(p.hash_value, SPLITS) for p in pairs
    )
    splits = split_pairs(pairs, caps, keep_splits)
    stats.pairs = {split: len(members) for split, members in splits.items()}
    splits_lib.require_records(stats.pairs, allow_empty, caps)
    texts = {
        split: {src: [p.src for p in members], tgt: [p.tgt for p in members]}
        for split, members in splits.items()
    }
    stats.vocab_size = write_text_corpus(out_dir, texts, languages, min_count)
    if bpe_merges:
        codes = learn_joint_bpe(texts["train"][src] + texts["train"][tgt], bpe_merges)
        stats.bpe_merges = len(codes.splitlines()) - 1  # the first line is "#version: 0.2"
        bpe_dir = os.path.join(out_dir, BPE_DIR)
        os.makedirs(bpe_dir, exist_ok=True)
        files.atomic_write_text(os.path.join(bpe_dir, "codes"), codes)
        stats.bpe_vocab_size = write_text_corpus(bpe_dir, apply_bpe(codes, texts), languages)
    return stats


def write_corpus_record(
    out_dir: str, languages: Sequence[str], tokenizer_name: str, lowercase: bool, bpe: bool
) -> None:
    """``corpus.json``: the languages, the tokenizer, the case and whether BPE was made."""
    files.atomic_write_text(
        os.path.join(out_dir, CORPUS_RECORD),
        json.dumps(
            dict(
                src=languages[0],
                tgt=languages[1],
                tokenizer=tokenizer_name,
                lowercase=lowercase,
                bpe=bool(bpe),
            ),
            indent=1,
        )
        + "\n",
    )


# ----------------------------------------------------------------------------- command


def read_sources(config: config_lib.Config) -> Iterator[Source]:
    """The pairs the flags name, with their input's split where it has one."""
    inputs = []
    if config.input:
        inputs.append((read_tsv, config.input, None))
    if config.input_prefix:
        inputs.append((read_aligned, config.input_prefix, None))
    for split in SPLITS:
        if config[split + "_input"]:
            inputs.append((read_tsv, config[split + "_input"], split))
        if config[split + "_prefix"]:
            inputs.append((read_aligned, config[split + "_prefix"], split))
    if not inputs:
        raise ParallelError(
            "give --input (a TSV) or --input_prefix (aligned files), or the splits' own "
            "(--train_input or --train_prefix, with dev and test)"
        )
    for reader, path, split in inputs:
        sources = reader(path, config.src, config.tgt)
        if reader is read_tsv:
            holds = "one row under its header"
        else:
            path, holds = "%s.%s" % (path, config.src), "one line"
        for source in splits_lib.from_input(sources, path, holds, split, config.allow_empty):
            yield dataclasses.replace(source, split=split) if split else source


def build(config: config_lib.Config) -> Stats:
    """Reads the flags' inputs and writes the corpus into ``--out_dir``."""
    with splits_lib.start_build(config.out_dir, CORPUS_RECORD, config.overwrite):
        if config.src == config.tgt:
            raise ParallelError("--src and --tgt are both %r; give two languages" % config.src)
        stats = Stats()
        keep_splits = EVAL_SPLITS if config.keep_eval_splits else ()
        pairs = make_pairs(
            read_sources(config),
            tokenizers.batch_tokenizer(config.tokenizer, config.lowercase),
            config.max_len,
            stats,
            config.skip_empty,
            keep_splits,
        )
        languages = (config.src, config.tgt)
        caps = {split: config["max_" + split] for split in SPLITS}
        write_corpus(
            pairs,
            config.out_dir,
            languages,
            stats,
            caps,
            config.min_count,
            config.bpe_merges,
            keep_splits,
            config.allow_empty,
        )
        write_corpus_record(
            config.out_dir, languages, config.tokenizer, config.lowercase, config.bpe_merges
        )
    return stats


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    flags.DEFINE_string(
        "src", None, "Source language: a column of the TSV, a file suffix.", flag_values=fv
    )
    flags.DEFINE_string(
        "tgt", None, "Target language: a column of the TSV, a file suffix.", flag_values=fv
    )
    flags.DEFINE_string(
        "input", None, "One TSV file whose header names --src and --tgt.", flag_values=fv
    )
    flags.DEFINE_string(
        "input_prefix", None, "Aligned files PREFIX.<src> and PREFIX.<tgt>.", flag_values=fv
    )
    for split in SPLITS:
        flags.DEFINE_string(
            split + "_input", None, "A TSV whose pairs all go to %s." % split, flag_values=fv
        )
        flags.DEFINE_string(
            split + "_prefix", None, "Aligned files whose pairs go to %s." % split, flag_values=fv
        )
        flags.DEFINE_integer(
            "max_" + split,
            None,
            "Keep at most this many %s pairs." % split,
            lower_bound=0,
            flag_values=fv,
        )
    flags.DEFINE_string("out_dir", None, "Directory of the corpus files.", flag_values=fv)
    tokenizers.define_flags(fv)
    flags.DEFINE_integer(
        "max_len",
        0,
        "Drop pairs with more tokens on a side (0: keep all).",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "min_count", 1, "Fewest train occurrences of a vocab entry.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer(
        "bpe_merges",
        0,
        "Joint BPE merge operations for bpe/ (0: no BPE).",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "skip_empty", False, "Drop pairs with an empty side instead of stopping.", flag_values=fv
    )
    flags.DEFINE_boolean(
        "keep_eval_splits",
        False,
        "Keep every line of the inputs' own dev and test splits, in file order.",
        flag_values=fv,
    )
    splits_lib.define_allow_empty(SPLITS, fv)
    splits_lib.define_overwrite(fv)
    flags.mark_flags_as_required(["src", "tgt", "out_dir"], flag_values=fv)


def run(config: config_lib.Config) -> Stats:
    """Builds the corpus and prints the summary."""
    stats = build(config)
    print("Built %s\n%s" % (config.out_dir, stats.summary()))
    return stats


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

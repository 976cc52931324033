"""Builds the MSVD (YouTube2Text) captioning dataset from the files MSVD users have.

Inputs, as distributed:

* ``--corpus_csv``: Microsoft's "MSR Video Description Corpus" (``MSR Video Description
  Corpus.csv``, often renamed ``video_corpus.csv``), read with the ``csv`` module as UTF-8
  (a byte-order mark is tolerated). Its header names the columns ``VideoID, Start, End,
  WorkerID, Source, AnnotationTime, Language, Description``; the build uses ``VideoID``,
  ``Start``, ``End``, ``Language`` and ``Description`` (``REQUIRED_COLUMNS``), and a
  header missing one of them is an error naming the file, the column and the columns
  found.
* ``--mapping``: ``youtube_mapping.txt`` of arctic-capgen-vid, one ``<VideoID>_<Start>_<End>
  vidN`` line per clip (1,970 lines). Blank lines are skipped; any other line that is not
  exactly two fields with the second ``vid`` and a positive number without leading zeros,
  or that repeats a clip or a vidN, is an error naming the line.
* ``--features`` (optional): a feature store (``acvi_tf.formats.frame_features.open_features``)
  in which every written clip must have features under its clip name or its vidN.

Rules, in the order they are applied:

1. Rows: a row is kept when ``Language`` (stripped) is exactly ``English`` and
   ``Description`` is non-empty after stripping; the others are counted by reason.
   ``VideoID``, ``Start`` and ``End`` are stripped and otherwise used as written (``5``,
   ``15``); the clip key is ``f"{VideoID}_{Start}_{End}"``.
2. Mapping: rows of a clip the mapping does not name are dropped; their clips are counted
   and a few are named in a warning (an error with ``--strict``). Mapping clips without a
   kept row are counted and warned about; they are in no output.
3. Split by the vidN index (Yao et al.; Venugopalan et al.): vid1 .. vid``train_clips``
   is train, the next ``val_clips`` val, the next ``test_clips`` test (defaults
   1200 / 100 / 670, the standard split; the ACVI paper says "the last 600", so the test
   size is a flag). Clips with a larger index are counted and left out.
4. Features (with ``--features``): a clip with features neither under its clip name nor
   under its vidN is an error listing up to 10 such clips and their count; with
   ``--skip_missing_features`` those clips are dropped (counted, warned about).
5. Captions: each description is lowercased (``--lowercase``, default on) and tokenised
   with NLTK's ``wordpunct_tokenize`` (``\\w+|[^\\w\\s]+``), tokens joined by single
   spaces. A description that gives no token is dropped with its reference, so that
   ``captions[i]`` is always the tokenisation of ``references[i]``. Captions keep the
   order of the CSV rows.
6. Vocabulary: the tokens of the TRAINING captions with a count of at least
   ``--min_count``, most frequent first, ties in code-point (``sorted``) order; no special
   tokens (the model adds its own).

Output, each file written atomically into ``--output_dir``:

* ``train.jsonl``, ``val.jsonl``, ``test.jsonl``: one JSON object per clip, in vidN
  order: ``{"clip": "<VideoID>_<Start>_<End>", "vid": "vid123", "captions": [tokenised,
  ...], "references": [raw description, stripped, ...]}``;
* ``vocab.txt``: ``word count`` lines;
* ``stats.json``: clips and captions per split, the vocabulary size, and the rows and
  clips dropped, by reason.

Nothing is written when an error is raised.

Usage::

  python -m data_prep.msvd --corpus_csv=video_corpus.csv \\
      --mapping=youtube_mapping.txt --output_dir=msvd \\
      [--features=msvd_features] [--skip_missing_features] [--strict] \\
      [--train_clips=1200 --val_clips=100 --test_clips=670] [--min_count=1] \\
      [--nolowercase]
"""

import collections
import csv
import dataclasses
import json
import os
import re
from typing import Dict, List, Mapping, Optional, Union

from absl import flags, logging

from acvi_tf import config as config_lib
from acvi_tf import errors, files
from acvi_tf.formats import frame_features
from data_prep import captions as captions_lib
from data_prep.captions import Clip, tokenize_caption

SPLITS = ("train", "val", "test")
CSV_COLUMNS = (
    "VideoID",
    "Start",
    "End",
    "WorkerID",
    "Source",
    "AnnotationTime",
    "Language",
    "Description",
)
REQUIRED_COLUMNS = ("VideoID", "Start", "End", "Language", "Description")
LANGUAGE = "English"
TRAIN_CLIPS, VAL_CLIPS, TEST_CLIPS = 1200, 100, 670
STATS_FILE = "stats.json"
MAX_LISTED = 10  # clip names listed in an error message
MAX_EXAMPLES = 5  # clip names listed in a warning
ROW_DROP_REASONS = (
    "not_english",
    "empty_description",
    "clip_not_in_mapping",
    "no_tokens",
    "clip_beyond_splits",
    "missing_features",
)
CLIP_DROP_REASONS = ("not_in_mapping", "no_english_captions", "beyond_splits", "missing_features")

_VID = re.compile(r"vid([1-9][0-9]*)")


class MsvdError(errors.UserError, ValueError):
    """The MSVD input cannot be used; the message names the file and what to fix."""


class CorpusError(MsvdError):
    """The corpus CSV cannot be read or lacks a column."""


class MappingError(MsvdError):
    """The mapping file cannot be read or has a malformed line."""


class MissingClipsError(MsvdError):
    """Clips of the CSV are not in the mapping (only with ``strict``)."""


class FeaturesError(MsvdError):
    """Clips to be written have no features in the feature store."""


@dataclasses.dataclass
class Stats:
    """What the build read, dropped and wrote; ``summary()`` formats it.

    Attributes:
      rows_read: data rows of the CSV.
      languages: rows per ``Language`` value (stripped; ``(empty)`` for none).
      rows_dropped: rows dropped, by reason (``not_english``, ``empty_description``,
        ``clip_not_in_mapping``, ``no_tokens``, ``clip_beyond_splits``,
        ``missing_features``).
      clips_in_csv: distinct clips with a kept (English, non-empty) row.
      mapping_clips: lines of the mapping.
      clips_dropped: clips left out, by reason (``not_in_mapping``: CSV clips the
        mapping lacks; ``no_english_captions``: mapping clips without a usable caption;
        ``beyond_splits``: index past the test split; ``missing_features``).
      not_in_mapping_examples: a few clips of the CSV the mapping lacks.
      missing_features_examples: a few clips without features (when skipped).
      clips: clips written per split.
      captions: captions written per split.
      vocab_size: lines of ``vocab.txt``.
      min_count: the vocabulary threshold used.
    """

    rows_read: int = 0
    languages: dict = dataclasses.field(default_factory=collections.Counter)
    rows_dropped: dict = dataclasses.field(default_factory=collections.Counter)
    clips_in_csv: int = 0
    mapping_clips: int = 0
    clips_dropped: dict = dataclasses.field(default_factory=collections.Counter)
    not_in_mapping_examples: list = dataclasses.field(default_factory=list)
    missing_features_examples: list = dataclasses.field(default_factory=list)
    clips: dict = dataclasses.field(default_factory=dict)
    captions: dict = dataclasses.field(default_factory=dict)
    vocab_size: int = 0
    min_count: int = 1

    def to_json(self) -> dict:
        """The stats as a JSON-serialisable dict (the content of ``stats.json``)."""
        return {
            "splits": {
                split: {"clips": self.clips.get(split, 0), "captions": self.captions.get(split, 0)}
                for split in SPLITS
            },
            "vocab_size": self.vocab_size,
            "min_count": self.min_count,
            "rows_read": self.rows_read,
            "rows_kept": sum(self.captions.values()),
            "rows_dropped": {
                reason: self.rows_dropped.get(reason, 0) for reason in ROW_DROP_REASONS
            },
            "languages": dict(sorted(self.languages.items())),
            "clips_in_csv": self.clips_in_csv,
            "mapping_clips": self.mapping_clips,
            "clips_dropped": {
                reason: self.clips_dropped.get(reason, 0) for reason in CLIP_DROP_REASONS
            },
            "not_in_mapping_examples": self.not_in_mapping_examples,
            "missing_features_examples": self.missing_features_examples,
        }

    def summary(self) -> str:
        """A multi-line, human-readable account of the build."""
        lines = [
            "CSV rows read: %d (%s); dropped: %s"
            % (
                self.rows_read,
                ", ".join("%s %d" % item for item in sorted(self.languages.items())) or "none",
                ", ".join(
                    "%d %s" % (n, reason.replace("_", " "))
                    for reason, n in self.to_json()["rows_dropped"].items()
                    if n
                )
                or "none",
            )
        ]
        lines.append(
            "clips: %d in the CSV, %d in the mapping; left out: %s"
            % (
                self.clips_in_csv,
                self.mapping_clips,
                ", ".join(
                    "%d %s" % (n, reason.replace("_", " "))
                    for reason, n in self.to_json()["clips_dropped"].items()
                    if n
                )
                or "none",
            )
        )
        for split in SPLITS:
            lines.append(
                "%-5s %5d clips %7d captions"
                % (split, self.clips.get(split, 0), self.captions.get(split, 0))
            )
        lines.append(
            "vocab: %d words with count >= %d in the training captions"
            % (self.vocab_size, self.min_count)
        )
        return "\n".join(lines)


def clip_key(video_id: str, start: Union[int, str], end: Union[int, str]) -> str:
    """The clip name ``<VideoID>_<Start>_<End>`` of ``youtube_mapping.txt``."""
    return "%s_%s_%s" % (video_id, start, end)


def _first_undecodable_line(path):
    """The number of the first line of ``path`` that is not UTF-8 (0 if none is)."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return number
    return 0


def read_corpus_csv(path: str, stats: Optional[Stats] = None) -> Dict[str, List[str]]:
    """Reads the English, non-empty descriptions of the MSR Video Description Corpus CSV.

    Args:
      path: the CSV file (UTF-8, optionally with a byte-order mark).
      stats: an optional ``Stats`` whose row counters are updated.

    Returns:
      A dict clip key -> list of descriptions (stripped), in the order of the rows; clips
      in the order they first appear.

    Raises:
      CorpusError: the file cannot be read, is not UTF-8 CSV, or its header lacks a
        column of ``REQUIRED_COLUMNS``.
    """
    stats = stats if stats is not None else Stats()
    descriptions = {}
    reader = None
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            found = [name.strip() for name in reader.fieldnames or []]
            missing = [name for name in REQUIRED_COLUMNS if name not in found]
            if missing:
                raise CorpusError(
                    "%s: the header has no column %s; columns found: %s. Pass the MSR "
                    "Video Description Corpus CSV, whose header is %s"
                    % (
                        path,
                        ", ".join(repr(name) for name in missing),
                        ", ".join(repr(name) for name in found) or "none",
                        ",".join(CSV_COLUMNS),
                    )
                )
            reader.fieldnames = found
            for row in reader:
                stats.rows_read += 1
                language = (row.get("Language") or "").strip()
                stats.languages[language or "(empty)"] += 1
                if language != LANGUAGE:
                    stats.rows_dropped["not_english"] += 1
                    continue
                description = (row.get("Description") or "").strip()
                if not description:
                    stats.rows_dropped["empty_description"] += 1
                    continue
                key = clip_key(
                    *((row.get(name) or "").strip() for name in ("VideoID", "Start", "End"))
                )
                descriptions.setdefault(key, []).append(description)
    except UnicodeDecodeError as e:
        raise CorpusError(
            "%s:%d: not UTF-8 text (%s); convert the file to UTF-8 (e.g. with "
            "iconv)" % (path, _first_undecodable_line(path), e)
        ) from e
    except csv.Error as e:
        line = reader.line_num if reader is not None else 1
        raise CorpusError("%s:%d: not readable as CSV: %s" % (path, line, e)) from e
    except OSError as e:
        raise CorpusError("cannot read --corpus_csv %s: %s" % (path, e)) from e
    stats.clips_in_csv = len(descriptions)
    return descriptions


def vid_index(vid: str) -> Optional[int]:
    """N of a ``vidN`` name, or None when ``vid`` is not of that form."""
    match = _VID.fullmatch(vid)
    return int(match.group(1)) if match else None


def read_mapping(path: str) -> Dict[str, int]:
    """Reads ``youtube_mapping.txt``: ``<VideoID>_<Start>_<End> vidN`` lines.

    Args:
      path: the mapping file (UTF-8).

    Returns:
      A dict clip key -> N (the index of its ``vidN``), in file order.

    Raises:
      MappingError: the file cannot be read, or a line is malformed or repeats a clip or
        a vidN; the message names the line.
    """
    mapping = {}
    line_of_index = {}
    try:
        with open(path, encoding="utf-8-sig") as f:
            for number, line in enumerate(f, start=1):
                fields = line.split()
                if not fields:
                    continue
                index = vid_index(fields[1]) if len(fields) == 2 else None
                if index is None:
                    raise MappingError(
                        "%s:%d: expected '<VideoID>_<Start>_<End> vidN' (two fields, the "
                        "second vid1, vid2, ...), got %r" % (path, number, line.rstrip("\n"))
                    )
                clip = fields[0]
                if clip in mapping:
                    raise MappingError(
                        "%s:%d: clip %s is already mapped to vid%d"
                        % (path, number, clip, mapping[clip])
                    )
                if index in line_of_index:
                    raise MappingError(
                        "%s:%d: vid%d is already used on line %d"
                        % (path, number, index, line_of_index[index])
                    )
                mapping[clip] = index
                line_of_index[index] = number
    except UnicodeDecodeError as e:
        raise MappingError("%s: not UTF-8 text (%s)" % (path, e)) from e
    except OSError as e:
        raise MappingError("cannot read --mapping %s: %s" % (path, e)) from e
    return mapping


def split_of_vid(
    index: int, train: int = TRAIN_CLIPS, val: int = VAL_CLIPS, test: int = TEST_CLIPS
) -> Optional[str]:
    """The split of clip vid``index``: the first ``train`` indices, the next ``val``, ...

    Args:
      index: N of vidN (1-based).
      train: clips in the train split.
      val: clips in the val split.
      test: clips in the test split.

    Returns:
      "train", "val" or "test", or None for an index past the test split.

    Raises:
      ValueError: ``index`` is below 1.
    """
    if index < 1:
        raise ValueError("vid indices start at 1, got %d" % index)
    if index <= train:
        return "train"
    if index <= train + val:
        return "val"
    if index <= train + val + test:
        return "test"
    return None


def _examples(names, limit):
    names = list(names)
    listed = ", ".join(names[:limit])
    return listed + (", ..." if len(names) > limit else "")


def assign_splits(
    descriptions: Mapping[str, List[str]],
    mapping: Mapping[str, int],
    stats: Stats,
    train: int = TRAIN_CLIPS,
    val: int = VAL_CLIPS,
    test: int = TEST_CLIPS,
    lowercase: bool = True,
    strict: bool = False,
) -> Dict[str, List[Clip]]:
    """Tokenises the captions and puts every mapped clip into its split.

    Args:
      descriptions: clip key -> raw descriptions, from ``read_corpus_csv``.
      mapping: clip key -> vid index, from ``read_mapping``.
      stats: the ``Stats`` to update.
      train: clips in the train split.
      val: clips in the val split.
      test: clips in the test split.
      lowercase: lowercase the captions before tokenising.
      strict: a CSV clip the mapping lacks is an error instead of a warning.

    Returns:
      A dict split -> list of ``Clip`` in vidN order.

    Raises:
      MissingClipsError: with ``strict``, CSV clips the mapping lacks.
    """
    unmapped = [clip for clip in descriptions if clip not in mapping]
    if unmapped:
        if strict:
            raise MissingClipsError(
                "%d clip(s) of the corpus CSV are not in the mapping: %s; pass the "
                "youtube_mapping.txt that belongs to the CSV, or drop --strict to skip "
                "them" % (len(unmapped), _examples(unmapped, MAX_LISTED))
            )
        stats.clips_dropped["not_in_mapping"] += len(unmapped)
        stats.rows_dropped["clip_not_in_mapping"] += sum(
            len(descriptions[clip]) for clip in unmapped
        )
        stats.not_in_mapping_examples = unmapped[:MAX_EXAMPLES]
        logging.warning(
            "%d clip(s) of the corpus CSV are not in the mapping and are skipped, e.g. %s",
            len(unmapped),
            _examples(unmapped, MAX_EXAMPLES),
        )
    splits = {split: [] for split in SPLITS}
    without_captions = []
    for clip, index in sorted(mapping.items(), key=lambda item: item[1]):
        split = split_of_vid(index, train, val, test)
        references = descriptions.get(clip, [])
        if split is None:
            stats.clips_dropped["beyond_splits"] += 1
            stats.rows_dropped["clip_beyond_splits"] += len(references)
            continue
        pairs = [(tokenize_caption(text, lowercase), text) for text in references]
        kept = [(caption, text) for caption, text in pairs if caption]
        stats.rows_dropped["no_tokens"] += len(pairs) - len(kept)
        if not kept:
            without_captions.append(clip)
            continue
        splits[split].append(
            Clip(
                clip=clip,
                vid="vid%d" % index,
                index=index,
                captions=tuple(caption for caption, _ in kept),
                references=tuple(text for _, text in kept),
            )
        )
    if without_captions:
        stats.clips_dropped["no_english_captions"] += len(without_captions)
        logging.warning(
            "%d clip(s) of the mapping have no English caption and are left out, e.g. %s",
            len(without_captions),
            _examples(without_captions, MAX_EXAMPLES),
        )
    return splits


def check_features(
    splits: Dict[str, List[Clip]], features_path: str, stats: Stats, skip_missing: bool = False
) -> None:
    """Checks that every clip has features under its clip name or its vidN.

    Args:
      splits: split -> list of ``Clip``; clips without features are removed in place
        when ``skip_missing`` is set.
      features_path: the feature store, as ``acvi_tf.formats.frame_features.open_features``
        takes it.
      stats: the ``Stats`` to update.
      skip_missing: drop clips without features (with a warning) instead of failing.

    Raises:
      FeaturesError: the store cannot be opened, or a clip has no features and
        ``skip_missing`` is not set.
    """
    try:
        store = frame_features.open_features(features_path)
    except ValueError as e:  # the store's own error, which names the path and the fix
        raise FeaturesError(str(e)) from e
    with store:
        missing = [
            clip.clip
            for split in SPLITS
            for clip in splits[split]
            if clip.clip not in store and clip.vid not in store
        ]
    if not missing:
        return
    if not skip_missing:
        raise FeaturesError(
            "%d clip(s) have no features in %s (looked up by clip name and by vidN): %s; "
            "extract their features into the store (python -m video_caption.features), "
            "or pass --skip_missing_features to leave them out"
            % (len(missing), features_path, _examples(missing, MAX_LISTED))
        )
    missing_set = set(missing)
    for split in SPLITS:
        kept = [clip for clip in splits[split] if clip.clip not in missing_set]
        stats.rows_dropped["missing_features"] += sum(
            len(clip.captions) for clip in splits[split] if clip.clip in missing_set
        )
        splits[split][:] = kept
    stats.clips_dropped["missing_features"] += len(missing)
    stats.missing_features_examples = missing[:MAX_EXAMPLES]
    logging.warning(
        "%d clip(s) have no features in %s and are left out, e.g. %s",
        len(missing),
        features_path,
        _examples(missing, MAX_EXAMPLES),
    )


def write_outputs(
    output_dir: str, splits: Mapping[str, List[Clip]], stats: Stats, min_count: int = 1
) -> None:
    """Writes the split files, ``vocab.txt`` and ``stats.json`` atomically.

    Args:
      output_dir: the output folder (created if needed).
      splits: split -> list of ``Clip``.
      stats: the ``Stats``; its per-split and vocab fields are filled in here.
      min_count: the vocabulary threshold.
    """
    stats.vocab_size = captions_lib.write_split_files(output_dir, splits, min_count)
    for split in SPLITS:
        stats.clips[split] = len(splits[split])
        stats.captions[split] = sum(len(clip.captions) for clip in splits[split])
        if not splits[split]:
            logging.warning(
                "the %s split is empty; check --train_clips, --val_clips and "
                "--test_clips against the mapping",
                split,
            )
    stats.min_count = min_count
    files.atomic_write_text(
        os.path.join(output_dir, STATS_FILE),
        json.dumps(stats.to_json(), indent=2, ensure_ascii=False) + "\n",
    )


def build(
    corpus_csv: str,
    mapping: str,
    output_dir: str,
    features: Optional[str] = None,
    skip_missing_features: bool = False,
    train_clips: int = TRAIN_CLIPS,
    val_clips: int = VAL_CLIPS,
    test_clips: int = TEST_CLIPS,
    min_count: int = 1,
    lowercase: bool = True,
    strict: bool = False,
) -> Stats:
    """Reads the corpus CSV and the mapping and writes the captioning dataset.

    Args:
      corpus_csv: the MSR Video Description Corpus CSV.
      mapping: ``youtube_mapping.txt``.
      output_dir: the output folder.
      features: optional feature store path; every written clip must have features.
      skip_missing_features: leave out clips without features instead of failing.
      train_clips: clips in the train split (vid1 .. vid``train_clips``).
      val_clips: clips in the val split (the next ones).
      test_clips: clips in the test split (the next ones).
      min_count: vocabulary count threshold over the training captions.
      lowercase: lowercase the captions before tokenising.
      strict: a CSV clip the mapping lacks is an error.

    Returns:
      The ``Stats`` of the build.

    Raises:
      MsvdError: an input cannot be used (``CorpusError``, ``MappingError``,
        ``MissingClipsError``, ``FeaturesError``); nothing is written then.
      ValueError: a split size is negative or ``min_count`` below 1.
    """
    for name, value in (
        ("train_clips", train_clips),
        ("val_clips", val_clips),
        ("test_clips", test_clips),
    ):
        if value < 0:
            raise ValueError("%s must be >= 0, got %d" % (name, value))
    if min_count < 1:
        raise ValueError("min_count must be >= 1, got %d" % min_count)
    stats = Stats(min_count=min_count)
    descriptions = read_corpus_csv(corpus_csv, stats)
    clip_index = read_mapping(mapping)
    stats.mapping_clips = len(clip_index)
    splits = assign_splits(
        descriptions, clip_index, stats, train_clips, val_clips, test_clips, lowercase, strict
    )
    if features is not None:
        check_features(splits, features, stats, skip_missing_features)
    write_outputs(output_dir, splits, stats, min_count)
    return stats


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command-line flags.

    Called only when the module runs as a program, so that several builders (and their
    tests) can be imported into one process without clashing flags.
    """
    flags.DEFINE_string(
        "corpus_csv",
        None,
        "The MSR Video Description Corpus CSV (video_corpus.csv).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "mapping",
        None,
        "youtube_mapping.txt: '<VideoID>_<Start>_<End> vidN' lines.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "output_dir",
        None,
        "Directory for {train,val,test}.jsonl, vocab.txt and stats.json.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "features",
        None,
        "Optional feature store; every clip written must "
        "have features under its clip name or its vidN.",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "skip_missing_features",
        False,
        "Leave out clips without features (with a warning) instead of failing.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "train_clips",
        TRAIN_CLIPS,
        "vid1 .. vidN of this many clips are the train split.",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "val_clips",
        VAL_CLIPS,
        "The next this many clips are the val split.",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "test_clips",
        TEST_CLIPS,
        "The next this many clips are the test split (the standard 670; the ACVI paper says 600).",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "min_count",
        1,
        "Vocabulary: words with at least this many occurrences in the training captions.",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "lowercase", True, "Lowercase the captions before tokenising.", flag_values=fv
    )
    flags.DEFINE_boolean(
        "strict",
        False,
        "A CSV clip missing from the mapping is an error instead of a warning.",
        flag_values=fv,
    )
    flags.mark_flags_as_required(["corpus_csv", "mapping", "output_dir"], flag_values=fv)


def run(config: config_lib.Config) -> None:
    """Builds the dataset from the flags and prints the summary."""
    stats = build(
        config.corpus_csv,
        config.mapping,
        config.output_dir,
        features=config.features,
        skip_missing_features=config.skip_missing_features,
        train_clips=config.train_clips,
        val_clips=config.val_clips,
        test_clips=config.test_clips,
        min_count=config.min_count,
        lowercase=config.lowercase,
        strict=config.strict,
    )
    print(
        "Built %s from %s and %s\n%s"
        % (config.output_dir, config.corpus_csv, config.mapping, stats.summary())
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

"""Builds a captioning dataset from your own captions and their videos or frame features.

Reads a CSV or TSV file with a header row, or JSON lines, with one caption per row (a
clip's captions on rows of their own), and the clips' frame features: either a feature
store (``--features``: what ``python -m video_caption.features --video_dir=...
--output=...`` extracts from a folder of videos, or any form
``acvi_tf.formats.frame_features`` reads), or a folder of videos (``--videos``), whose
features the build extracts into ``<output_dir>/features``. It writes the captioner's
files into ``--output_dir``: ``{train,val,test}.jsonl`` (one clip per line: ``clip``,
``vid``, tokenised ``captions`` and the raw ``references``), ``vocab.txt`` (``word
count`` of the training captions) and ``stats.json``; ``video_caption.run_captioning
--data_dir`` trains on them. The MSVD builder uses its records and tokenisation.

Rules, in the order they are applied:

1. An empty clip id or caption is an error naming the file and the line, or with
   ``--skip_empty`` dropped and counted; so is a caption that gives no token.
2. Captions are lowercased (``--nolowercase`` keeps the case) and tokenised with NLTK's
   ``wordpunct_tokenize``; a clip keeps its captions in file order.
3. Videos (with ``--videos``): a clip's video is the file ``<clip id><extension>``
   directly in the folder, the extension one of ``.avi .mp4 .mkv .webm .mov .mpg`` in
   any case (``acvi_tf.formats.video_folder``). A clip without one is an error naming
   the file and line of its first caption. The videos of the captioned clips go through
   ``python -m video_caption.features`` (its default CNN, frames and precision, or the
   ``--cnn``, ``--cnn_weights``, ``--max_frames``, ``--num_frames``, ``--dtype`` and
   ``--batch_size`` given here) into the store ``<output_dir>/features``, whose
   ``features.json`` records the settings for ``video_caption.caption``; a rerun resumes
   it. A video that cannot be decoded is an error naming the file. With
   ``--skip_missing_features`` the clips without a video or with an undecodable one
   have no features, and rule 4 drops them.
4. Features: a clip without features in the store is an error listing up to 10 such
   clips, or with ``--skip_missing_features`` dropped (counted).
5. Splits: a row's own (``--split_field``: ``train``, ``val`` or ``test``, the same on
   every row of a clip) or a stable hash of the clip id (90% train, 5% val, 5% test);
   each split in ascending hash order. A split with no clip stops the build before it
   writes anything, unless ``--allow_empty`` names it.
6. Vocabulary: the tokens of the training captions seen at least ``--min_count`` times,
   most frequent first, ties in code-point order; no special tokens (the model adds its
   own).

Usage::

  python -m data_prep.captions --captions=captions.csv --features=features \\
      --output_dir=my_clips [--clip_field=clip --caption_field=caption]
  python -m data_prep.captions --captions=captions.csv --videos=my_videos \\
      --output_dir=my_clips [--cnn=googlenet --cnn_weights=bvlc_googlenet.npy]
"""

import collections
import csv
import ctypes
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from absl import flags, logging
from nltk.tokenize import wordpunct_tokenize

from acvi_tf import config as config_lib
from acvi_tf import errors, files
from acvi_tf.formats import frame_features, video_folder
from data_prep import splits as splits_lib

SPLITS = ("train", "val", "test")
VOCAB_FILE = "vocab.txt"
STATS_FILE = "stats.json"
# The output folder's links to the videos the extractor reads, while it runs.
LINKS_DIR = ".video-links"
_PR_SET_PDEATHSIG = 1  # prctl(2)
MAX_LISTED = 10
FEATURES_DIR = "features"  # the store extracted from --videos, in --output_dir
FAILED_FILE = "failed.txt"  # video_caption.features lists undecodable videos here
# The flags passed on to video_caption.features when given.
EXTRACTION_FLAGS = ("cnn", "cnn_weights", "max_frames", "num_frames", "dtype", "batch_size")


class CaptionsError(errors.UserError, ValueError):
    """The captions or the features cannot be used; the message names the file and fix."""


@dataclasses.dataclass(frozen=True)
class Clip:
    """One output record.

    Attributes:
      clip: the clip's name (its key in the feature store).
      vid: another name the store may hold it under (MSVD's ``vidN``; the clip name).
      index: its order key within its split.
      captions: tokenised captions.
      references: the raw captions (stripped), aligned with ``captions``.
    """

    clip: str
    vid: str
    index: int
    captions: tuple
    references: tuple

    def to_json(self) -> dict:
        """The JSON object of one ``.jsonl`` line."""
        return {
            "clip": self.clip,
            "vid": self.vid,
            "captions": list(self.captions),
            "references": list(self.references),
        }


def tokenize_caption(text: str, lowercase: bool = True) -> str:
    """Lowercases (optionally) and wordpunct-tokenises ``text``; tokens joined by spaces
    ("" when there are none)."""
    return " ".join(wordpunct_tokenize(text.lower() if lowercase else text))


def vocab_entries(counter: collections.Counter, min_count: int = 1) -> List[Tuple[str, int]]:
    """``(word, count)`` pairs with count >= ``min_count``: most frequent first, ties sorted."""
    return sorted(
        ((word, count) for word, count in counter.items() if count >= min_count),
        key=lambda entry: (-entry[1], entry[0]),
    )


def write_split_files(output_dir: str, splits: Dict[str, List[Clip]], min_count: int = 1) -> int:
    """Writes ``{split}.jsonl`` and ``vocab.txt`` atomically; returns the vocabulary size."""
    os.makedirs(output_dir, exist_ok=True)
    for split in SPLITS:
        with files.atomic_write(os.path.join(output_dir, split + ".jsonl")) as f:
            for clip in splits[split]:
                f.write(json.dumps(clip.to_json(), ensure_ascii=False) + "\n")
    counter = collections.Counter(
        token for clip in splits["train"] for caption in clip.captions for token in caption.split()
    )
    entries = vocab_entries(counter, min_count)
    files.atomic_write_text(
        os.path.join(output_dir, VOCAB_FILE), "".join("%s %d\n" % entry for entry in entries)
    )
    return len(entries)


# ----------------------------------------------------------------------------- readers


def read_rows(
    path: str, clip_field: str, caption_field: str, split_field: Optional[str] = None
) -> Iterator[dict]:
    """``{clip, caption, split, where}`` of each row of a CSV, TSV or JSON-lines file.

    Raises:
      CaptionsError: a missing field, a ragged row, bad JSON or a byte that is not UTF-8.
    """
    names = [clip_field, caption_field] + ([split_field] if split_field else [])
    extension = os.path.splitext(path)[1].lower()
    lines = files.utf8_lines(path, CaptionsError)
    if extension in (".jsonl", ".json"):
        records = ((n, _json_record(path, n, line)) for n, line in lines if line.strip())
    else:
        records = _table_records(path, lines, "\t" if extension == ".tsv" else ",")
    for number, record in records:
        where = "%s:%d" % (path, number)
        missing = [name for name in names if name not in record]
        if missing:
            raise CaptionsError(
                "%s: no field %r (the record has %s); name the right one with "
                "--clip_field, --caption_field or --split_field"
                % (where, missing[0], ", ".join(repr(k) for k in record) or "none")
            )
        yield dict(
            clip=str(record[clip_field]).strip(),
            caption=str(record[caption_field]).strip(),
            split=str(record[split_field]).strip() if split_field else None,
            where=where,
        )


def _json_record(path, number, line):
    try:
        record = json.loads(line)
    except ValueError as e:
        raise CaptionsError("%s:%d: not a JSON object (%s)" % (path, number, e)) from e
    if not isinstance(record, dict):
        raise CaptionsError(
            "%s:%d: a JSON %s, not an object" % (path, number, type(record).__name__)
        )
    return record


def _table_records(path, lines, delimiter):
    rows = ((n, line.rstrip("\r\n")) for n, line in lines)
    try:
        _, header_line = next(rows)
    except StopIteration:
        raise CaptionsError("%s is empty; the first row must name the columns" % path) from None
    header = next(csv.reader([header_line], delimiter=delimiter))
    for number, line in rows:
        if not line.strip():
            continue
        cells = next(csv.reader([line], delimiter=delimiter))
        if len(cells) != len(header):
            raise CaptionsError(
                "%s:%d: %d cells, but the header has %d (%s); quote cells that hold the "
                "delimiter" % (path, number, len(cells), len(header), ", ".join(header))
            )
        yield number, dict(zip(header, cells))


# ----------------------------------------------------------------------------- build


@dataclasses.dataclass
class Stats:
    """What the build read, dropped and wrote."""

    rows_read: int = 0
    rows_dropped: dict = dataclasses.field(default_factory=dict)
    clips_dropped_missing_features: int = 0
    features: str = ""
    clips: dict = dataclasses.field(default_factory=dict)
    captions: dict = dataclasses.field(default_factory=dict)
    vocab_size: int = 0

    def summary(self) -> str:
        """A multi-line, human-readable account of the build."""
        lines = ["rows read: %d; dropped: %s" % (self.rows_read, dict(self.rows_dropped) or "none")]
        lines.append("features: %s" % self.features)
        lines.append("clips without features dropped: %d" % self.clips_dropped_missing_features)
        for split in SPLITS:
            lines.append(
                "%-5s clips: %d, captions: %d"
                % (split, self.clips.get(split, 0), self.captions.get(split, 0))
            )
        lines.append("vocab size: %d" % self.vocab_size)
        return "\n".join(lines)


def group_clips(
    rows: Iterable[dict], lowercase: bool, skip_empty: bool, stats: Stats
) -> Dict[str, dict]:
    """The captions of each clip, in file order: clip -> {captions, references, split}."""
    clips = collections.OrderedDict()
    for row in rows:
        stats.rows_read += 1
        caption = tokenize_caption(row["caption"], lowercase)
        problem = (
            "empty clip id" if not row["clip"] else "caption with no token" if not caption else None
        )
        if problem:
            if not skip_empty:
                raise CaptionsError(
                    "%s: %s; remove the row or pass --skip_empty" % (row["where"], problem)
                )
            stats.rows_dropped[problem] = stats.rows_dropped.get(problem, 0) + 1
            continue
        entry = clips.setdefault(
            row["clip"], dict(captions=[], references=[], split=row["split"], where=row["where"])
        )
        if row["split"] and row["split"] not in SPLITS or entry["split"] != row["split"]:
            raise CaptionsError(
                "%s: split %r of clip %s; a clip's rows need one split of %s"
                % (row["where"], row["split"], row["clip"], ", ".join(SPLITS))
            )
        entry["captions"].append(caption)
        entry["references"].append(row["caption"])
    return clips


def ends_with_parent() -> None:
    """In the extractor's process before it starts: on Linux it gets SIGTERM when the
    build dies, however it dies (a SIGKILL included), instead of writing on alone."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def extract_video_features(config: config_lib.Config, clips: Mapping[str, dict]) -> str:
    """Extracts the features of the captioned clips' videos into ``<output_dir>/features``.

    The builders do not import the captioner, so this runs its command, ``python -m
    video_caption.features``, on a folder of links to the clips' videos (``LINKS_DIR``), with
    the extraction flags that ``config`` gives (``EXTRACTION_FLAGS``).

    Args:
      config: the command's flags (``videos``, ``output_dir``, ``skip_missing_features``,
        ``captions`` and the extraction flags).
      clips: clip -> its entry of ``group_clips`` (``where``: its first caption's line).

    Returns:
      The store's path.

    Raises:
      CaptionsError: a clip has no video or a video cannot be decoded (unless
        ``skip_missing_features``), no clip has a video, or the extraction stopped.
    """
    try:
        videos = video_folder.find_videos(config.videos)
    except frame_features.FeaturesError as e:
        raise CaptionsError(str(e)) from e
    missing = [name for name in clips if name not in videos]
    if missing and not config.skip_missing_features:
        raise CaptionsError(
            "%s: clip %s has no video in %s (a file <clip id><extension>, the extension one "
            "of %s); add the video, correct the clip id or pass --skip_missing_features "
            "(%d clip(s) have none: %s)"
            % (
                clips[missing[0]]["where"],
                missing[0],
                config.videos,
                " ".join(video_folder.VIDEO_EXTENSIONS),
                len(missing),
                ", ".join(missing[:MAX_LISTED]),
            )
        )
    present = {name: videos[name] for name in clips if name in videos}
    if not present:
        raise CaptionsError(
            "no clip of %s has a video in %s; name the clips' videos <clip id><extension>"
            % (config.captions, config.videos)
        )
    store = os.path.join(config.output_dir, FEATURES_DIR)
    failed_path = os.path.join(store, FAILED_FILE)
    if os.path.exists(failed_path):  # an earlier run's; this run writes its own
        os.unlink(failed_path)
    # the extractor reads the captioned clips' videos through links in the output folder
    # (a killed build's are replaced by the next one)
    folder = os.path.join(config.output_dir, LINKS_DIR)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    try:
        for path in present.values():
            os.symlink(os.path.abspath(path), os.path.join(folder, os.path.basename(path)))
        command = [sys.executable, "-m", "video_caption.features"]
        command += ["--video_dir=%s" % folder, "--output=%s" % store]
        command += [
            "--%s=%s" % (name, getattr(config, name))
            for name in EXTRACTION_FLAGS
            if getattr(config, name) is not None
        ]
        logging.info(
            "extracting the features of %d videos into %s with python -m "
            "video_caption.features, which logs its progress",
            len(present),
            store,
        )
        status = subprocess.run(command, check=False, preexec_fn=ends_with_parent).returncode
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if status == 1 and os.path.exists(failed_path):
        with open(failed_path, encoding="utf-8") as f:
            failed = [line.rstrip("\n").split("\t") for line in f if line.strip()]
        if not config.skip_missing_features:
            clip, link, reason = failed[0]
            raise CaptionsError(
                "%s; replace or remove the video, or pass --skip_missing_features (%d "
                "video(s) failed)" % (reason.replace(link, present[clip]), len(failed))
            )
    elif status != 0:
        raise CaptionsError(
            "python -m video_caption.features stopped with exit status %d; its error is "
            "above" % status
        )
    return store


def split_clips(clips: Dict[str, dict]) -> Dict[str, List[Clip]]:
    """The clips of ``group_clips`` in their own split or their hash's, in hash order."""
    splits = {split: [] for split in SPLITS}
    for name, entry in clips.items():
        key = splits_lib.key_hash(name)
        split = entry["split"] or splits_lib.split_of(key, SPLITS)
        splits[split].append(
            Clip(name, name, key, tuple(entry["captions"]), tuple(entry["references"]))
        )
    for members in splits.values():
        members.sort(key=lambda clip: clip.index)
    return splits


def _require_clips(splits: Dict[str, List[Clip]], allow_empty: Sequence[str]) -> None:
    """Refuses a split with no clip that ``--allow_empty`` does not name."""
    counts = {split: len(members) for split, members in splits.items()}
    splits_lib.require_records(counts, allow_empty, what="clips")


def build(config: config_lib.Config) -> Stats:
    """Reads the flags' captions and features (or videos) and writes the dataset."""
    given = [name for name in EXTRACTION_FLAGS if getattr(config, name) is not None]
    if given and not config.videos:
        raise CaptionsError("--%s applies only with --videos" % given[0])
    # stats.json is written last: a build cut short (its feature extraction) resumes
    with splits_lib.start_build(config.output_dir, STATS_FILE, config.overwrite, "output_dir"):
        stats = Stats()
        fields = (config.clip_field, config.caption_field, config.split_field)
        rows = read_rows(config.captions, *fields)
        clips = group_clips(rows, config.lowercase, config.skip_empty, stats)
        _require_clips(split_clips(clips), config.allow_empty)
        if config.videos:  # the folder is checked before the extraction writes into it
            files.check_output(os.path.join(config.output_dir, STATS_FILE), "--output_dir")
        features = extract_video_features(config, clips) if config.videos else config.features
        try:
            store = frame_features.open_features(features)
        except ValueError as e:  # the store's own error names the path and the fix
            raise CaptionsError(str(e)) from e
        with store:
            missing = [name for name in clips if name not in store]
        if missing and not config.skip_missing_features:
            raise CaptionsError(
                "%d clip(s) have no features in %s: %s; extract them (python -m "
                "video_caption.features) or pass --skip_missing_features"
                % (len(missing), features, ", ".join(missing[:MAX_LISTED]))
            )
        for name in missing:
            del clips[name]
            logging.warning("clip %s has no features in %s; left out", name, features)
        stats.features = features
        stats.clips_dropped_missing_features = len(missing)
        splits = split_clips(clips)
        _require_clips(splits, config.allow_empty)
        stats.vocab_size = write_split_files(config.output_dir, splits, config.min_count)
        stats.clips = {split: len(members) for split, members in splits.items()}
        stats.captions = {s: sum(len(c.captions) for c in m) for s, m in splits.items()}
        files.atomic_write_text(
            os.path.join(config.output_dir, STATS_FILE),
            json.dumps(dataclasses.asdict(stats), indent=2) + "\n",
        )
    return stats


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    flags.DEFINE_string(
        "captions", None, "CSV, TSV or JSON lines: one caption per row.", flag_values=fv
    )
    flags.DEFINE_string(
        "features", None, "The clips' feature store (or give --videos).", flag_values=fv
    )
    flags.DEFINE_string(
        "videos",
        None,
        "Folder of the clips' videos, <clip id><extension> each (or give --features); "
        "their features are extracted into <output_dir>/features.",
        flag_values=fv,
    )
    flags.DEFINE_string("output_dir", None, "Where the dataset goes.", flag_values=fv)
    flags.DEFINE_string("clip_field", "clip", "Column or key of the clip id.", flag_values=fv)
    flags.DEFINE_string("caption_field", "caption", "Column or key of the caption.", flag_values=fv)
    flags.DEFINE_string(
        "split_field", None, "Column or key holding train, val or test.", flag_values=fv
    )
    flags.DEFINE_boolean("lowercase", True, "Lowercase before tokenising.", flag_values=fv)
    flags.DEFINE_boolean(
        "skip_empty", False, "Drop empty rows instead of stopping.", flag_values=fv
    )
    flags.DEFINE_boolean(
        "skip_missing_features",
        False,
        "Drop clips without features instead of stopping.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "min_count", 1, "Fewest train occurrences of a word.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_string(
        "cnn",
        None,
        "With --videos: video_caption.features --cnn (default its own).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "cnn_weights",
        None,
        "With --videos: the CNN's weights (default: a seeded random initialisation).",
        flag_values=fv,
    )
    for name, meaning in (
        ("max_frames", "frames decoded per video"),
        ("num_frames", "equally spaced frames kept per clip"),
        ("batch_size", "frames per CNN forward pass"),
    ):
        flags.DEFINE_integer(
            name,
            None,
            "With --videos: %s (default video_caption.features's)." % meaning,
            lower_bound=1,
            flag_values=fv,
        )
    flags.DEFINE_string(
        "dtype", None, "With --videos: stored precision, float32 or float16.", flag_values=fv
    )
    splits_lib.define_allow_empty(SPLITS, fv)
    splits_lib.define_overwrite(fv, "output_dir", STATS_FILE)
    flags.mark_flags_as_required(["captions", "output_dir"], flag_values=fv)
    flags.mark_flags_as_mutual_exclusive(["features", "videos"], required=True, flag_values=fv)


def run(config: config_lib.Config) -> Stats:
    """Builds the dataset and prints the summary."""
    stats = build(config)
    print("Built %s\n%s" % (config.output_dir, stats.summary()))
    return stats


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

"""Frame features of video clips: the extraction that ``video_caption.features`` runs as a
command, and that the captioner's decode report and its raw-text command run on videos.

Each clip's first ``max_frames`` frames are decoded, ``num_frames`` equally spaced ones
kept and passed through the CNN; the store's settings (``features.json``, ``SETTINGS``)
say how, so that new videos are extracted as the training store was.

Output formats:

* ``npy``: ``--output`` is a folder with ``<clip>.npy`` per clip, each written
  atomically, ``features.json`` (cnn, weights, num_frames, max_frames, dim) and, when
  clips failed, ``failed.txt``;
* ``hdf5``: ``--output`` is one HDF5 file, one dataset per clip at the top level
  (flushed after each clip), the settings as root attributes; failures go to
  ``<output>.failed.txt``. HDF5 cannot be written atomically: a run killed in the
  middle of a write may damage the file, so ``npy`` is the safer choice for long runs.
"""

import dataclasses
import datetime
import json
import os
import time
from typing import List, Optional, Sequence

import h5py
import numpy as np
from absl import logging

from acvi_tf import files
from acvi_tf.files import atomic_write, atomic_write_text
from acvi_tf.formats.frame_features import FeaturesError
from acvi_tf.formats.video_folder import find_videos
from acvi_tf.process import stops
from video_caption import cnn as cnn_lib
from video_caption import frames as frames_lib

FORMATS = ("npy", "hdf5")
METADATA_FILE = "features.json"
# What to do about a store's settings file that cannot be read.
METADATA_FIX = "delete the store (or its features.json) and extract again, or use another --output"
FAILED_FILE = "failed.txt"
# The settings recorded with a store; a resumed run must match them.
SETTINGS = ("cnn", "weights", "num_frames", "max_frames", "dim", "dtype")
DTYPES = ("float32", "float16")


# ----------------------------------------------------------------------------- inputs


def read_clip_list(path: str) -> List[str]:
    """Reads clip names: the first field of every non-blank line not starting with "#".

    A ``youtube_mapping.txt`` (``<clip> vidN`` lines) is therefore a valid list.

    Args:
      path: a UTF-8 text file.

    Returns:
      The names, in file order, without duplicates.

    Raises:
      FeaturesError: the file cannot be read.
    """
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise FeaturesError("cannot read the clip list --clips=%s: %s" % (path, e)) from e
    names = {}
    for line in lines:
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            names[fields[0]] = None
    return list(names)


def clip_features(extractor: cnn_lib.Extractor, frames: np.ndarray, num_frames: int) -> np.ndarray:
    """Features of the ``num_frames`` equally spaced frames of one decoded clip.

    Args:
      extractor: a ``cnn.Extractor``.
      frames: [n, H, W, 3] decoded frames (already cut to the first ``max_frames``).
      num_frames: K.

    Returns:
      float32 [min(n, K), dim].
    """
    indices = frames_lib.sample_indices(len(frames), num_frames)
    return extractor.extract(np.asarray(frames)[indices])


# ----------------------------------------------------------------------------- writers


def read_settings(store_path: str) -> dict:
    """The extraction settings a store made by this command records (``SETTINGS``):
    ``features.json`` of a folder, the root attributes of an HDF5 file.

    Raises:
      FeaturesError: the store records none (it was made another way).
    """
    if os.path.isdir(store_path):
        metadata = os.path.join(store_path, METADATA_FILE)
        if os.path.exists(metadata):
            return files.read_json(metadata, METADATA_FIX, error=FeaturesError)
    elif h5py.is_hdf5(store_path):
        with h5py.File(store_path, "r") as f:
            if "cnn" in f.attrs:
                return {key: _plain(f.attrs[key]) for key in SETTINGS if key in f.attrs}
    raise FeaturesError(
        "%s records no extraction settings (cnn, weights, frames); new videos can only be "
        "captioned with features made by python -m video_caption.features" % store_path
    )


def _check_settings(output, found, settings):
    """Refuses to resume into an output made with other settings."""
    differing = [key for key in SETTINGS if key in found and found[key] != settings[key]]
    if differing:
        raise FeaturesError(
            "%s was made with other settings (%s); use another --output or delete it"
            % (
                output,
                ", ".join("%s %r, now %r" % (key, found[key], settings[key]) for key in differing),
            )
        )


class _NpyWriter:
    """A folder of ``<clip>.npy`` files, each written atomically."""

    def __init__(self, output, settings):
        if os.path.exists(output) and not os.path.isdir(output):
            raise FeaturesError("--output=%s is a file; --format=npy writes a folder" % output)
        os.makedirs(output, exist_ok=True)
        self.output = output
        self.failed_path = os.path.join(output, FAILED_FILE)
        metadata = os.path.join(output, METADATA_FILE)
        if os.path.exists(metadata):
            found = files.read_json(metadata, METADATA_FIX, error=FeaturesError)
            _check_settings(output, found, settings)
        atomic_write_text(metadata, json.dumps(settings, indent=2, sort_keys=True) + "\n")

    def done(self):
        """Clips already stored."""
        return {
            name[: -len(".npy")]
            for name in os.listdir(self.output)
            if name.endswith(".npy") and not name.startswith(".")
        }

    def write(self, clip, features):
        """Stores one clip."""
        with atomic_write(os.path.join(self.output, clip + ".npy"), binary=True) as f:
            np.save(f, features)

    def close(self):
        """Nothing to release."""


class _Hdf5Writer:
    """One HDF5 file, a dataset per clip, flushed after every clip."""

    def __init__(self, output, settings):
        if os.path.isdir(output):
            raise FeaturesError("--output=%s is a folder; --format=hdf5 writes a file" % output)
        directory = os.path.dirname(os.path.abspath(output))
        os.makedirs(directory, exist_ok=True)
        self.output = output
        self.failed_path = output + "." + FAILED_FILE
        try:
            self.file = h5py.File(output, "a")
        except OSError as e:
            raise FeaturesError(
                "cannot open %s as HDF5 (%s); delete it or use another --output" % (output, e)
            ) from e
        found = {key: _plain(value) for key, value in self.file.attrs.items()}
        _check_settings(output, found, settings)
        for key, value in settings.items():
            self.file.attrs[key] = value
        self.dim = settings["dim"]

    def done(self):
        """Clips already stored; a dataset of the wrong shape (a write cut short by a
        crash) is deleted so that the clip is extracted again."""
        names = set()
        for name in list(self.file.keys()):
            item = self.file[name]
            if isinstance(item, h5py.Dataset) and item.ndim == 2 and item.shape[1] == self.dim:
                names.add(name)
            else:
                logging.warning("%s: dropping the malformed entry %s", self.output, name)
                del self.file[name]
        return names

    def write(self, clip, features):
        """Stores one clip and flushes, so that a killed run keeps it."""
        self.file.create_dataset(clip, data=features)
        self.file.flush()

    def close(self):
        """Closes the file."""
        self.file.close()


def _plain(value):
    """An HDF5 attribute as a plain Python value (for comparing settings)."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.generic):
        return value.item()
    return value


# ----------------------------------------------------------------------------- extraction


@dataclasses.dataclass
class Stats:
    """What an extraction run found, skipped, wrote and failed on."""

    videos: int = 0
    skipped: int = 0
    extracted: int = 0
    failed: list = dataclasses.field(default_factory=list)  # (clip, path, message)
    frames: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        """One human-readable line."""
        return "%d videos: %d already done, %d extracted (%d frames), %d failed, %.1f s" % (
            self.videos,
            self.skipped,
            self.extracted,
            self.frames,
            len(self.failed),
            self.seconds,
        )


def _progress(done, total, skipped, failed, start):
    elapsed = max(time.time() - start, 1e-9)
    rate = done / elapsed
    left = total - done
    eta = datetime.timedelta(seconds=int(left / rate)) if rate > 0 else "?"
    logging.info(
        "features: %d/%d clips (%d failed; %d were done before this run), %.2f clips/s, ETA %s",
        done,
        total,
        failed,
        skipped,
        rate,
        eta,
    )


def _write_failed(path, failed):
    """Lists this run's failures (``clip<TAB>file<TAB>reason``); none removes the file."""
    if failed:
        atomic_write_text(
            path,
            "".join(
                "%s\t%s\t%s\n" % (clip, video, " ".join(message.split()))
                for clip, video, message in failed
            ),
        )
    elif os.path.exists(path):
        os.unlink(path)


def extract_features(
    video_dir: str,
    output: str,
    cnn: str = "googlenet",
    cnn_weights: Optional[str] = None,
    max_frames: int = 240,
    num_frames: int = 24,
    fmt: str = "npy",
    batch_size: int = 32,
    clips: Optional[Sequence[str]] = None,
    log_every: int = 10,
    extractor: Optional[cnn_lib.Extractor] = None,
    dtype: str = "float32",
) -> Stats:
    """Extracts and stores the frame features of every video of a folder.

    Args:
      video_dir: the folder of videos.
      output: a folder (``fmt="npy"``) or an HDF5 file (``fmt="hdf5"``).
      cnn: a key of ``cnn.CNNS``.
      cnn_weights: the CNN's weights file, or None for the seeded random initialisation.
      max_frames: only the first frames of a video are decoded.
      num_frames: K, the equally spaced frames kept per clip.
      fmt: "npy" or "hdf5".
      batch_size: frames per CNN forward pass.
      clips: optional clip names to restrict the run to.
      log_every: a progress line every this many extracted clips.
      extractor: an already built ``cnn.Extractor`` to use instead of building one (it
        must be the ``cnn`` network with ``cnn_weights``; tests share one).
      dtype: "float32", or "float16" to halve the disk space (readers return float32).

    Returns:
      The run's ``Stats``.

    Raises:
      FeaturesError: bad folders, an unknown format, or an output made with other
        settings. cnn.WeightsError: the weights do not fit.
    """
    if fmt not in FORMATS:
        raise FeaturesError("unknown --format=%s; choose one of %s" % (fmt, ", ".join(FORMATS)))
    if cnn not in cnn_lib.CNNS:
        raise FeaturesError("unknown --cnn=%s; choose one of %s" % (cnn, ", ".join(cnn_lib.CNNS)))
    if dtype not in DTYPES:
        raise FeaturesError("unknown dtype %s; choose one of %s" % (dtype, ", ".join(DTYPES)))
    start = time.time()
    videos = find_videos(video_dir, clips)
    settings = {
        "cnn": cnn,
        "weights": os.path.abspath(cnn_weights) if cnn_weights else "random",
        "num_frames": int(num_frames),
        "max_frames": int(max_frames),
        "dim": int(cnn_lib.CNNS[cnn].dim),
        "dtype": dtype,
    }
    writer = (_NpyWriter if fmt == "npy" else _Hdf5Writer)(output, settings)
    stats = Stats(videos=len(videos))
    try:
        done = writer.done()
        todo = [(clip, path) for clip, path in videos.items() if clip not in done]
        stats.skipped = len(videos) - len(todo)
        logging.info(
            "%d videos in %s: %d already in %s, %d to extract",
            len(videos),
            video_dir,
            stats.skipped,
            output,
            len(todo),
        )
        if todo and extractor is None:
            extractor = cnn_lib.build_extractor(cnn, cnn_weights, batch_size)
        loop_start = time.time()
        for count, (clip, path) in enumerate(todo, start=1):
            stops.check()  # a stop comes between clips (run's stops.AtCheck)
            try:
                decoded = frames_lib.read_frames(path, max_frames)
            except frames_lib.VideoError as e:
                logging.error("skipping clip %s: %s", clip, e)
                stats.failed.append((clip, path, str(e)))
            else:
                features = clip_features(extractor, decoded, num_frames)
                writer.write(clip, features.astype(dtype))
                stats.extracted += 1
                stats.frames += len(features)
            if count % log_every == 0 or count == len(todo):
                _progress(count, len(todo), stats.skipped, len(stats.failed), loop_start)
    finally:
        writer.close()
    _write_failed(writer.failed_path, stats.failed)
    if stats.failed:
        logging.warning(
            "%d clip(s) failed (listed in %s): %s",
            len(stats.failed),
            writer.failed_path,
            ", ".join(c for c, _, _ in stats.failed[:10]),
        )
    stats.seconds = time.time() - start
    return stats

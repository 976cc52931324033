"""The captioning data: split files, the vocabulary, frame features and batches.

A prepared dataset (``data_prep.msvd`` writes it, for MSVD and for the shipped demo clips)
is a folder with ``{train,val,test}.jsonl`` (one clip per line: ``clip``, ``vid``,
``captions`` tokenized with NLTK's wordpunct tokenizer, raw ``references``) and
``vocab.txt`` (``word count`` lines, most frequent first). Features come from any store
``acvi_tf.formats.frame_features.open_features`` reads, keyed by clip name or by ``vidN``.

Ids: 0 ``<pad>``, 1 ``<unk>``, 2 ``<s>``, 3 ``</s>``, then the vocabulary file's words.
Every clip is ``num_frames`` rows: a clip with more feature rows (e.g. arctic-capgen-vid's
features of every frame) is sampled with ``frames.sample_indices``; one with fewer is
zero-padded and masked.
"""

import json
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from acvi_tf import errors, files
from acvi_tf.formats import vocabulary
from video_caption import frames as frames_lib

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
RESERVED = (PAD, UNK, BOS, EOS)
# How to build a vocabulary with words, for ``vocabulary.require_a_word``'s message.
BUILD_HINT = "want 'word count' lines; build it with data_prep.captions or data_prep.msvd"
SPLITS = ("train", "val", "test")
_RECORD_KEYS = ("clip", "vid", "captions", "references")

BATCH_SIGNATURE = dict(
    features=tf.TensorSpec([None, None, None], tf.float32),
    num_frames=tf.TensorSpec([None], tf.int32),
    caption_in=tf.TensorSpec([None, None], tf.int32),
    caption_out=tf.TensorSpec([None, None], tf.int32),
    caption_len=tf.TensorSpec([None], tf.int32),
)


class DataError(errors.UserError, ValueError):
    """Bad captioning input; the message names the file, the record and the fix."""


class Vocab:
    """Word <-> id mapping from a ``word count`` file.

    Args:
      path: the vocabulary file, most frequent word first.
      max_size: keep at most this many ids, the 4 reserved ones included (0: all).

    Raises:
      DataError: a line is not ``word count``, or holds a reserved token or a word
        twice; or ``max_size`` leaves no word besides the reserved tokens, or the file
        has none.
    """

    def __init__(self, path: str, max_size: int = 0) -> None:
        self._id_to_word = list(RESERVED)
        for number, line in files.utf8_lines(path, DataError):
            pieces = line.split()
            if len(pieces) != 2 or not pieces[1].isdigit():
                raise DataError(
                    "%s:%d: want 'word count', got %r; rebuild it with "
                    "data_prep.msvd" % (path, number, line.rstrip("\n"))
                )
            if pieces[0] in self._id_to_word[:4]:
                raise DataError(
                    "%s:%d: %r is reserved and must not be in the file" % (path, number, pieces[0])
                )
            if max_size and len(self._id_to_word) >= max_size:
                break
            self._id_to_word.append(pieces[0])
        self._word_to_id = {w: i for i, w in enumerate(self._id_to_word)}
        if len(self._word_to_id) != len(self._id_to_word):
            raise DataError("%s: a word appears twice; each must appear once" % path)
        words = len(self._id_to_word) - len(RESERVED)
        vocabulary.require_a_word(path, RESERVED, words, DataError, max_size, BUILD_HINT)

    def size(self) -> int:
        """Number of ids, reserved ones included."""
        return len(self._id_to_word)

    def words(self) -> List[str]:
        """All words in id order, the reserved ones first."""
        return list(self._id_to_word)

    def encode(self, caption: str) -> List[int]:
        """Ids of a tokenized caption (space-separated), unknown words as ``<unk>``."""
        return [self._word_to_id.get(w, UNK_ID) for w in caption.split()]

    def decode(self, ids: Iterable[int]) -> List[str]:
        """Words of ``ids`` up to the first ``</s>``, padding and ``<s>`` dropped."""
        words = []
        for i in ids:
            if i == EOS_ID:
                break
            if i not in (PAD_ID, BOS_ID):
                words.append(self._id_to_word[i])
        return words


def read_split(path: str) -> List[dict]:
    """The clip records of one ``<split>.jsonl`` file, in file order.

    Blank lines at the end are ignored; blank lines between records are skipped with a
    warning naming the first.

    Raises:
      DataError: a line is not JSON or lacks a field, or a clip has no captions or an
        empty one.
    """
    records, blank_lines = [], []
    for number, line in files.utf8_lines(path, DataError):
        if not line.strip():
            blank_lines.append(number)
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(
                "%s:%d: not JSON (%s); rebuild the split with data_prep.msvd" % (path, number, e)
            ) from e
        missing = (
            _RECORD_KEYS
            if not isinstance(record, dict)
            else [k for k in _RECORD_KEYS if k not in record]
        )
        if missing:
            raise DataError(
                "%s:%d: record lacks %s; rebuild the split with "
                "data_prep.msvd" % (path, number, ", ".join(missing))
            )
        if not record["captions"] or not record["references"]:
            raise DataError("%s:%d: clip %s has no captions" % (path, number, record["clip"]))
        for field in ("captions", "references"):
            blank = [k for k, text in enumerate(record[field]) if not str(text).strip()]
            if blank:
                raise DataError(
                    "%s:%d: clip %s has an empty caption (%s %d); remove it or rebuild the "
                    "split with data_prep.msvd" % (path, number, record["clip"], field, blank[0])
                )
        records.append(record)
        last = number
    if not records:
        raise DataError(
            "%s holds no clips; rebuild the corpus with clips in this split (the captioner "
            "validates on val.jsonl and decodes test.jsonl; a builder's --allow_empty leaves "
            "a split empty)" % path
        )
    inside = [n for n in blank_lines if n < last]  # blank lines at the end are usual
    if inside:
        logging.warning(
            "%s: skipped %d blank line(s) between records (first: line %d)",
            path,
            len(inside),
            inside[0],
        )
    return records


def clip_features(
    store: Mapping[str, Any], record: Mapping[str, Any], num_frames: int, source: str = "features"
) -> Tuple[np.ndarray, int]:
    """``[num_frames, D]`` features of one clip (zero rows past its length) and the length.

    Raises:
      DataError: the store has the clip under neither its name nor its ``vidN``.
    """
    for key in (record["clip"], record["vid"]):
        if key in store:
            rows = np.asarray(store[key], np.float32)
            break
    else:
        raise DataError(
            "%s has no features for clip %s (%s); extract them with "
            "python -m video_caption.features" % (source, record["clip"], record["vid"])
        )
    if len(rows) > num_frames:
        rows = rows[frames_lib.sample_indices(len(rows), num_frames)]
    padded = np.zeros([num_frames, rows.shape[1]], np.float32)
    padded[: len(rows)] = rows
    return padded, len(rows)


class ClipSet:
    """The clips of one split with their features in memory, ready to batch.

    Args:
      records: from ``read_split``.
      store: a feature store (``acvi_tf.formats.frame_features.open_features``).
      num_frames: K, rows per clip.
      source: how to name the store in errors.
    """

    def __init__(
        self,
        records: List[dict],
        store: Mapping[str, Any],
        num_frames: int,
        source: str = "features",
    ) -> None:
        self.records = records
        loaded = [clip_features(store, r, num_frames, source) for r in records]
        self.features = np.stack([f for f, _ in loaded])  # [N, K, D]
        self.num_frames = np.array([n for _, n in loaded], np.int32)
        empty = [r["clip"] for r, n in zip(records, self.num_frames) if n == 0]
        if empty:
            raise DataError("%s: clips with no feature rows: %s" % (source, empty[:10]))

    def feature_statistics(self) -> Tuple[np.ndarray, np.ndarray]:
        """Per-dimension mean and standard deviation over the real frames: ``([D], [D])``."""
        real = self.features[np.arange(self.features.shape[1])[None] < self.num_frames[:, None]]
        return real.mean(axis=0), np.maximum(real.std(axis=0), 1e-6)

    def standardize(self, mean: np.ndarray, std: np.ndarray) -> None:
        """Maps the real frames to ``(f - mean) / std`` in place (padding stays zero)."""
        real = np.arange(self.features.shape[1])[None] < self.num_frames[:, None]
        self.features[real] = (self.features[real] - mean) / std

    def references(self) -> Dict[str, List[str]]:
        """``{clip: [raw reference, ...]}`` for scoring."""
        return {r["clip"]: list(r["references"]) for r in self.records}

    def clip_batches(self, batch_size: int) -> Iterator[Tuple[List[dict], Dict[str, tf.Tensor]]]:
        """Yields ``(records, {features, num_frames})`` for decoding, in split order."""
        for start in range(0, len(self.records), batch_size):
            end = start + batch_size
            yield (
                self.records[start:end],
                dict(
                    features=tf.constant(self.features[start:end]),
                    num_frames=tf.constant(self.num_frames[start:end]),
                ),
            )

    def caption_pairs(self, vocab: Vocab, max_caption_len: int = 0) -> List[Tuple[int, List[int]]]:
        """``(clip index, caption ids)`` for every caption; ``max_caption_len`` > 0 drops
        captions with that many tokens or more (arctic-capgen-vid's ``maxlen``)."""
        pairs = []
        for index, record in enumerate(self.records):
            for caption in record["captions"]:
                ids = vocab.encode(caption)
                if ids and not (max_caption_len and len(ids) >= max_caption_len):
                    pairs.append((index, ids))
        return pairs

    def caption_batches(
        self,
        pairs: Sequence[Tuple[int, List[int]]],
        batch_size: int,
        rng: Optional[np.random.Generator] = None,
        fixed_length: bool = False,
    ) -> Iterator[Dict[str, np.ndarray]]:
        """Yields teacher-forcing batches (``BATCH_SIGNATURE``) of ``pairs``.

        Args:
          pairs: from ``caption_pairs``.
          batch_size: captions per batch.
          rng: a ``np.random.Generator`` to shuffle with; in order when None.
          fixed_length: pad every batch to the longest caption of ``pairs``, not of the
            batch (``--jit_compile``: XLA compiles one program per shape).
        """
        order = np.arange(len(pairs)) if rng is None else rng.permutation(len(pairs))
        length = max(len(ids) for _, ids in pairs) if fixed_length and pairs else None
        for start in range(0, len(order), batch_size):
            chosen = [pairs[i] for i in order[start : start + batch_size]]
            yield make_batch(
                [self.features[i] for i, _ in chosen],
                [self.num_frames[i] for i, _ in chosen],
                [ids for _, ids in chosen],
                length,
            )


def make_batch(
    features: np.ndarray,
    num_frames: np.ndarray,
    captions: Sequence[List[int]],
    max_words: Optional[int] = None,
) -> Dict[str, np.ndarray]:
    """A ``BATCH_SIGNATURE`` dict: ``<s> w1 .. wn`` in, ``w1 .. wn </s>`` out, padded to
    the longest caption, or to ``max_words + 1`` when given."""
    length = (max_words or max(len(ids) for ids in captions)) + 1
    caption_in = np.full([len(captions), length], PAD_ID, np.int32)
    caption_out = np.full([len(captions), length], PAD_ID, np.int32)
    for row, ids in enumerate(captions):
        caption_in[row, : len(ids) + 1] = [BOS_ID] + ids
        caption_out[row, : len(ids) + 1] = ids + [EOS_ID]
    return dict(
        features=tf.constant(np.stack(features)),
        num_frames=tf.constant(np.asarray(num_frames, np.int32)),
        caption_in=tf.constant(caption_in),
        caption_out=tf.constant(caption_out),
        caption_len=tf.constant([len(ids) + 1 for ids in captions], tf.int32),
    )

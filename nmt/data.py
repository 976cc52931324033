"""The vocabulary and the ``tf.data`` pipelines of tensorflow/nmt.

The files are read by ``acvi_tf.formats.nmt_text``; the rules here are those of
tensorflow/nmt's ``utils/vocab_utils.py`` and ``utils/iterator_utils.py``:

* unknown words map to ``<unk>``;
* training and perplexity pairs with an empty source or target are dropped, then both
  sides are truncated (not dropped) to their maximum lengths; the target input is
  ``<s> y`` and the target output ``y </s>``; the source gets no ``</s>``;
* training batches are bucketed by ``max(src_len // w, tgt_len // w)`` (capped at
  ``num_buckets``) with ``group_by_window`` and padded with the ``</s>`` id;
* inference keeps every source line, empty ones included (see ``infer_dataset``).
"""

import itertools
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from acvi_tf.formats.nmt_text import (
    EOS_ID,
    SOS_ID,
    SPECIALS,
    UNK_ID,
    NmtDataError,
    read_vocab_tokens,
    tokenize,
)

# Every batch of ``train_dataset`` and ``eval_dataset``: one ``tf.function`` signature.
BATCH_SIGNATURE = {
    "src": tf.TensorSpec([None, None], tf.int32),
    "src_len": tf.TensorSpec([None], tf.int32),
    "tgt_in": tf.TensorSpec([None, None], tf.int32),
    "tgt_out": tf.TensorSpec([None, None], tf.int32),
    "tgt_len": tf.TensorSpec([None], tf.int32),
}
_PADDING_VALUES = {"src": EOS_ID, "src_len": 0, "tgt_in": EOS_ID, "tgt_out": EOS_ID, "tgt_len": 0}
_SEQUENCE_FIELDS = ("src", "tgt_in", "tgt_out")
_DEFAULT_BUCKET_WIDTH = 10  # tensorflow/nmt's width when there is no src_max_len


class Vocab:
    """Token <-> id mapping of a checked vocab file (``<unk> <s> </s>`` are ids 0-2).

    Args:
      path: a vocab file that ``check_vocab`` accepts or wrote.

    Raises:
      NmtDataError: the file breaks the vocab rules or does not start with the specials.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._id_to_word = read_vocab_tokens(path)
        if tuple(self._id_to_word[:3]) != SPECIALS:
            raise NmtDataError(
                "%s does not start with %s; pass it through "
                "acvi_tf.formats.nmt_text.check_vocab and read the path it returns"
                % (path, " ".join(SPECIALS))
            )
        self._word_to_id = {word: i for i, word in enumerate(self._id_to_word)}

    def size(self) -> int:
        """Number of ids, specials included."""
        return len(self._id_to_word)

    def word2id(self, word: str) -> int:
        """The id of ``word``, or ``UNK_ID``."""
        return self._word_to_id.get(word, UNK_ID)

    def id2word(self, word_id: int) -> str:
        """The token of an id; ValueError outside the vocabulary."""
        word_id = int(word_id)
        if not 0 <= word_id < len(self._id_to_word):
            raise ValueError(
                "id %d is not in the vocabulary of %d tokens (%s)"
                % (word_id, len(self._id_to_word), self.path)
            )
        return self._id_to_word[word_id]

    def words(self) -> List[str]:
        """All tokens in id order."""
        return list(self._id_to_word)

    def encode(self, tokens: Sequence[str]) -> List[int]:
        """Ids of a token list (unknown tokens give ``UNK_ID``)."""
        return [self.word2id(token) for token in tokens]

    def decode(self, ids: Iterable[int]) -> List[str]:
        """Tokens of an id sequence up to (not including) the first ``</s>``."""
        words = []
        for word_id in ids:
            if int(word_id) == EOS_ID:
                break
            words.append(self.id2word(word_id))
        return words


class Vocabs(NamedTuple):
    """A translation run's two vocabularies.

    Attributes:
      src: the source ``Vocab``.
      tgt: the target ``Vocab``.
    """

    src: Vocab
    tgt: Vocab


def _truncate(tokens, max_len):
    """The first ``max_len`` tokens (all of them when ``max_len`` is None or 0)."""
    return tokens[:max_len] if max_len else tokens


def make_examples(
    pairs: Iterable[Tuple[str, str]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    src_max_len: Optional[int] = None,
    tgt_max_len: Optional[int] = None,
) -> List[Dict[str, List[int]]]:
    """Id sequences of sentence pairs under tensorflow/nmt's training rules.

    Pairs with an empty source or target are dropped (and counted in the log); then the
    source is cut to ``src_max_len`` tokens and the target to ``tgt_max_len`` tokens
    (None or 0: no limit; with a limit the log counts the pairs cut). The target input
    is ``<s> y`` and the target output ``y </s>``; the source has no ``</s>``.

    Args:
      pairs: iterable of ``(src_line, tgt_line)`` strings.
      src_vocab, tgt_vocab: ``Vocab`` objects.
      src_max_len, tgt_max_len: truncation lengths.

    Returns:
      A list of dicts of Python int lists: ``src``, ``tgt_in``, ``tgt_out``.
    """
    examples, dropped, truncated, total = [], 0, 0, 0
    for src_line, tgt_line in pairs:
        total += 1
        src, tgt = tokenize(src_line), tokenize(tgt_line)
        if not src or not tgt:
            dropped += 1
            continue
        cut_src, cut_tgt = _truncate(src, src_max_len), _truncate(tgt, tgt_max_len)
        truncated += len(cut_src) < len(src) or len(cut_tgt) < len(tgt)
        tgt_ids = tgt_vocab.encode(cut_tgt)
        examples.append(
            {
                "src": src_vocab.encode(cut_src),
                "tgt_in": [SOS_ID] + tgt_ids,
                "tgt_out": tgt_ids + [EOS_ID],
            }
        )
    if dropped:
        logging.info(
            "Dropped %d of %d sentence pairs with an empty source or target", dropped, total
        )
    limits = [
        "%d %s" % (limit, side)
        for limit, side in ((src_max_len, "source"), (tgt_max_len, "target"))
        if limit
    ]
    if limits:
        logging.info(
            "%d examples; %d truncated to %s tokens", len(examples), truncated, " / ".join(limits)
        )
    return examples


def bucket_width(src_max_len: Optional[int], num_buckets: int) -> int:
    """tensorflow/nmt's bucket width: ceil(src_max_len / num_buckets), else 10."""
    if src_max_len:
        return (src_max_len + num_buckets - 1) // num_buckets
    return _DEFAULT_BUCKET_WIDTH


def bucket_key(src_len: int, tgt_len: int, src_max_len: Optional[int], num_buckets: int) -> int:
    """tensorflow/nmt's bucket of a pair: min(num_buckets, max(src_len // w, tgt_len // w)).

    Args:
      src_len: source length.
      tgt_len: target length as tensorflow/nmt counts it, ``|y| + 1`` (``tgt_len``).
      src_max_len: the training source maximum (sets the width w).
      num_buckets: number of buckets; keys run from 0 to ``num_buckets`` inclusive.

    Returns:
      The integer key.
    """
    width = bucket_width(src_max_len, num_buckets)
    return min(num_buckets, max(src_len // width, tgt_len // width))


def _ragged(rows):
    """A ``tf.RaggedTensor`` of int32 rows, built without a Python loop per token."""
    lengths = np.array([len(row) for row in rows], np.int64)
    values = np.fromiter(itertools.chain.from_iterable(rows), np.int32, count=int(lengths.sum()))
    return tf.RaggedTensor.from_row_lengths(values, lengths)


def _check_not_empty(examples, what, source):
    """Refuses no examples, naming the files they come from (``source``) when given."""
    if not examples:
        raise NmtDataError(
            "no %s examples%s: the files are empty or every pair has an "
            "empty side; check the data paths" % (what, " in " + " and ".join(source or ()))
        )


def _example_dataset(examples):
    """One element per example: the three sequences and their lengths."""
    dataset = tf.data.Dataset.from_tensor_slices(
        {field: _ragged([example[field] for example in examples]) for field in _SEQUENCE_FIELDS}
    )
    return dataset.map(
        lambda ex: {
            "src": ex["src"],
            "src_len": tf.size(ex["src"]),
            "tgt_in": ex["tgt_in"],
            "tgt_out": ex["tgt_out"],
            "tgt_len": tf.size(ex["tgt_in"]),
        }
    )


def _padded_batch(dataset, batch_size, pad_to=None):
    padding = {key: _PADDING_VALUES[key] for key in dataset.element_spec}
    shapes = None
    if pad_to is not None:
        src_len, tgt_len = pad_to
        shapes = {
            "src": [src_len],
            "src_len": [],
            "tgt_in": [tgt_len + 1],
            "tgt_out": [tgt_len + 1],
            "tgt_len": [],
        }
    return dataset.padded_batch(batch_size, padded_shapes=shapes, padding_values=padding)


def train_dataset(
    examples: Sequence[Dict[str, List[int]]],
    batch_size: int,
    src_max_len: Optional[int],
    num_buckets: int,
    seed: int,
    pad_to: Optional[Tuple[int, int]] = None,
    source: Optional[str] = None,
) -> tf.data.Dataset:
    """Endless, reshuffled, length-bucketed training batches (tensorflow/nmt's iterator).

    Each epoch shuffles the examples with a buffer of ``batch_size * 1000`` (seeded,
    reshuffled every epoch), groups them by ``bucket_key`` into windows of
    ``batch_size`` and pads each window with the ``</s>`` id. A bucket's last window of an
    epoch gives a smaller batch, as tensorflow/nmt's re-initialised iterator does, so
    every example appears exactly once per epoch.

    Args:
      examples: dicts from ``make_examples``.
      batch_size: examples per batch.
      src_max_len: the training source maximum (bucket width).
      num_buckets: number of buckets; 1 or less disables bucketing.
      seed: shuffle seed.
      pad_to: optional ``(src_max_len, tgt_max_len)``: pad every batch to these lengths
        (the target fields to ``tgt_max_len + 1``) rather than to its longest sentence,
        so that XLA (``--jit_compile``) sees one shape per batch size. The examples must
        already be cut to them.
      source: the files the examples come from, named when there are none.

    Returns:
      A ``tf.data.Dataset`` of dicts shaped as ``BATCH_SIGNATURE``.
    """
    _check_not_empty(examples, "training", source)
    dataset = _example_dataset(examples).shuffle(
        batch_size * 1000, seed=seed, reshuffle_each_iteration=True
    )
    if num_buckets > 1:
        width = bucket_width(src_max_len, num_buckets)

        def key_func(example):
            bucket = tf.maximum(example["src_len"] // width, example["tgt_len"] // width)
            return tf.cast(tf.minimum(num_buckets, bucket), tf.int64)

        dataset = dataset.group_by_window(
            key_func=key_func,
            reduce_func=lambda unused_key, window: _padded_batch(window, batch_size, pad_to),
            window_size=batch_size,
        )
    else:
        dataset = _padded_batch(dataset, batch_size, pad_to)
    return dataset.repeat().prefetch(tf.data.AUTOTUNE)


def eval_dataset(
    examples: Sequence[Dict[str, List[int]]], batch_size: int, source: Optional[str] = None
) -> tf.data.Dataset:
    """One pass over the examples in order, padded like ``train_dataset``, no bucketing.

    Args:
      examples: dicts from ``make_examples``.
      batch_size: examples per batch; the last batch may be smaller.
      source: the files the examples come from, named when there are none.

    Returns:
      A ``tf.data.Dataset`` of dicts shaped as ``BATCH_SIGNATURE``.
    """
    _check_not_empty(examples, "evaluation", source)
    return _padded_batch(_example_dataset(examples), batch_size).prefetch(tf.data.AUTOTUNE)


def _pad_columns(batch, multiple):
    """Pads ``src`` with ``</s>`` to a positive multiple of ``multiple`` columns."""
    width = tf.shape(batch["src"])[1]
    missing = tf.maximum(1, (width + multiple - 1) // multiple) * multiple - width
    return {
        "src": tf.pad(batch["src"], [[0, 0], [0, missing]], constant_values=EOS_ID),
        "src_len": batch["src_len"],
    }


def _encode_sources(src_lines, src_vocab, src_max_len, empty_as_unk):
    """Each line's source ids, cut to ``src_max_len``; an empty line's are none (or
    ``<unk>``'s with ``empty_as_unk``), which a warning counts."""
    sources, empty = [], []
    for line_number, line in enumerate(src_lines, start=1):
        tokens = tokenize(line)
        if not tokens:
            empty.append(line_number)
        ids = src_vocab.encode(_truncate(tokens, src_max_len))
        sources.append(ids if ids or not empty_as_unk else [UNK_ID])
    if empty:
        logging.warning(
            "%d empty source lines (first at line %d) get %s",
            len(empty),
            empty[0],
            "the source <unk>" if empty_as_unk else "src_len 0",
        )
    return sources


def infer_batch(src_line: str, src_vocab: Vocab) -> Dict[str, tf.Tensor]:
    """The one batch ``infer_dataset([src_line], src_vocab, 1)`` gives, built directly: a
    caller that inspects sentences one at a time builds no input pipeline per sentence.

    Args:
      src_line: a source sentence (tokens).
      src_vocab: the source ``Vocab``.

    Returns:
      ``src`` [1, max(1, length)] (an empty line: one ``</s>`` column) and ``src_len``
      [1], int32.
    """
    (ids,) = _encode_sources([src_line], src_vocab, None, False)
    src = np.full([1, max(1, len(ids))], _PADDING_VALUES["src"], np.int32)
    src[0, : len(ids)] = ids
    return {"src": tf.constant(src), "src_len": tf.constant([len(ids)], tf.int32)}


def infer_dataset(
    src_lines: Sequence[str],
    src_vocab: Vocab,
    batch_size: int,
    src_max_len: Optional[int] = None,
    empty_as_unk: bool = False,
    length_multiple: int = 1,
) -> tf.data.Dataset:
    """Source batches for decoding, one per ``batch_size`` lines, in order.

    tensorflow/nmt's ``get_infer_iterator``: tokens are cut to ``src_max_len`` (None or 0:
    no limit) and padded with the ``</s>`` id, and no line is dropped, so the output has
    one translation per input line. An empty line becomes a source of length 0
    (``src_len`` 0, only padding). tensorflow/nmt's attention (TF1 contrib and TFA)
    asserts positive memory lengths and so fails on such a line; ``empty_as_unk=True``
    instead turns it into the one-token source ``<unk>``. A batch whose sources are all
    empty still has one (padding) column. ``length_multiple`` pads each batch's width
    further, to a multiple of it, so that XLA (``--jit_compile``) compiles one program per
    multiple rather than one per sentence length.

    Args:
      src_lines: source sentences (strings).
      src_vocab: the source ``Vocab``.
      batch_size: lines per batch; the last batch may be smaller.
      src_max_len: truncation length.
      empty_as_unk: give empty lines the source ``<unk>`` (length 1).
      length_multiple: pad the width of every batch to a multiple of this.

    Returns:
      A ``tf.data.Dataset`` of dicts: ``src`` ``[batch, time]`` and ``src_len`` ``[batch]``, int32.
    """
    if not src_lines:
        raise NmtDataError("no source lines to translate; check the input file")
    sources = _encode_sources(src_lines, src_vocab, src_max_len, empty_as_unk)
    dataset = tf.data.Dataset.from_tensor_slices({"src": _ragged(sources)})
    dataset = dataset.map(lambda ex: {"src": ex["src"], "src_len": tf.size(ex["src"])})
    dataset = _padded_batch(dataset, batch_size).map(
        lambda batch: _pad_columns(batch, length_multiple)
    )
    return dataset.prefetch(tf.data.AUTOTUNE)

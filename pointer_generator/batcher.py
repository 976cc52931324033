"""Examples, batches and the ``tf.data`` pipeline of See et al.'s ``batcher.py``.

The original fills queues from 16 reader and 4 batching threads; here one Python
generator does the same work in the same order and ``tf.data`` prefetches it:

* read the ``.bin`` chunks (file list reshuffled every pass; in file order, once, with
  ``single_pass``), skipping examples with an empty article or abstract or an abstract
  without ``<s> </s>`` tags (counted; a whole pass with nothing usable is an error);
* build each ``Example``: truncation to ``max_enc_steps`` / ``max_dec_steps`` and See's
  decoder input / target construction;
* bucketing: take ``bucket_cache_size`` batches' worth of examples, sort them by article
  length, cut them into batches and shuffle the batch order (no bucketing with
  ``single_pass``, as the original's cache of one batch, nor for a decode without it, which
  the original runs one article at a time: the pool of a data set smaller than it holds each
  article several times, and sorting puts the copies in one batch);
* pad into the original's batch fields.
"""

import random
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from acvi_tf.formats import bin_files, see_vocab
from pointer_generator import vocab as vocab_lib

BUCKET_CACHE_SIZE = 100  # the original's batch queue: 100 batches sorted together
# Skipped records logged one by one before the log keeps to every 1,000th.
SKIPS_LOGGED = 10

BATCH_SIGNATURE = {
    "enc_batch": tf.TensorSpec([None, None], tf.int32),
    "enc_lens": tf.TensorSpec([None], tf.int32),
    "enc_padding_mask": tf.TensorSpec([None, None], tf.float32),
    "enc_batch_extend_vocab": tf.TensorSpec([None, None], tf.int32),
    "max_art_oovs": tf.TensorSpec([], tf.int32),
    "art_oovs": tf.TensorSpec([None, None], tf.string),
    "dec_batch": tf.TensorSpec([None, None], tf.int32),
    "target_batch": tf.TensorSpec([None, None], tf.int32),
    "dec_padding_mask": tf.TensorSpec([None, None], tf.float32),
    "original_articles": tf.TensorSpec([None], tf.string),
    "original_abstracts": tf.TensorSpec([None], tf.string),
    "original_abstract_sents": tf.TensorSpec([None], tf.string),  # "\n"-joined
}


class Example:
    """One article/abstract pair turned into the id sequences the model reads.

    Args:
      article: the article, tokens separated by single spaces.
      abstract_sentences: the reference sentences (from ``abstract2sents``).
      vocab: a ``Vocab``.
      max_enc_steps: article truncation length.
      max_dec_steps: decoder length; longer abstracts are cut with no [STOP].
      pointer_gen: build the extended-vocabulary ids and use them in the target.
    """

    def __init__(
        self,
        article: str,
        abstract_sentences: List[str],
        vocab: vocab_lib.Vocab,
        max_enc_steps: int,
        max_dec_steps: int,
        pointer_gen: bool = True,
    ) -> None:
        start_id = vocab.word2id(see_vocab.START_DECODING)
        stop_id = vocab.word2id(see_vocab.STOP_DECODING)
        article_words = article.split()[:max_enc_steps]
        self.enc_len = len(article_words)
        self.enc_input = [vocab.word2id(w) for w in article_words]
        abstract = " ".join(abstract_sentences)
        abstract_words = abstract.split()
        abs_ids = [vocab.word2id(w) for w in abstract_words]
        self.dec_input, self.target = decoder_sequences(abs_ids, max_dec_steps, start_id, stop_id)
        self.dec_len = len(self.dec_input)
        if pointer_gen:
            self.enc_input_extend_vocab, self.article_oovs = vocab_lib.article2ids(
                article_words, vocab
            )
            abs_ids_extend = vocab_lib.abstract2ids(abstract_words, vocab, self.article_oovs)
            _, self.target = decoder_sequences(abs_ids_extend, max_dec_steps, start_id, stop_id)
        else:
            self.enc_input_extend_vocab, self.article_oovs = list(self.enc_input), []
        self.original_article = article
        self.original_abstract = abstract
        self.original_abstract_sents = abstract_sentences


def unusable_pair(article: str, abstract: str, sentences: List[str]) -> Optional[str]:
    """Why a record cannot be trained on, or None.

    Args:
      article: the record's article text.
      abstract: its abstract, with See's sentence tags.
      sentences: the abstract's sentences.
    """
    if not article.strip():
        return "has an empty article"
    if not abstract.strip():
        return "has an empty abstract"
    if not sentences:
        return "has an abstract without <s> </s> sentence tags"
    return None


def decoder_sequences(
    ids: List[int], max_len: int, start_id: int, stop_id: int
) -> Tuple[List[int], List[int]]:
    """See's decoder input ``[START] + ids`` and target ``ids + [STOP]``, equal lengths.

    When ``[START] + ids`` is longer than ``max_len`` both are cut to ``max_len`` and the
    target gets no [STOP].
    """
    dec_input = [start_id] + list(ids)
    target = list(ids)
    if len(dec_input) > max_len:
        dec_input = dec_input[:max_len]
        target = target[:max_len]
    else:
        target.append(stop_id)
    return dec_input, target


def make_batch(
    examples: Sequence[Example], pad_id: int, max_dec_steps: int, enc_steps: Optional[int] = None
) -> Dict[str, np.ndarray]:
    """Pads examples into the original's batch fields (NumPy arrays).

    The encoder side is padded to the longest article of the batch, or to ``enc_steps``
    when given (one shape for every batch, as XLA wants); the decoder side always to
    ``max_dec_steps``.
    """
    size = len(examples)
    max_enc = enc_steps or max(ex.enc_len for ex in examples)
    batch = {
        "enc_batch": np.full((size, max_enc), pad_id, np.int32),
        "enc_lens": np.array([ex.enc_len for ex in examples], np.int32),
        "enc_padding_mask": np.zeros((size, max_enc), np.float32),
        "enc_batch_extend_vocab": np.full((size, max_enc), pad_id, np.int32),
        "dec_batch": np.full((size, max_dec_steps), pad_id, np.int32),
        "target_batch": np.full((size, max_dec_steps), pad_id, np.int32),
        "dec_padding_mask": np.zeros((size, max_dec_steps), np.float32),
    }
    max_oovs = max(len(ex.article_oovs) for ex in examples)
    batch["max_art_oovs"] = np.int32(max_oovs)
    batch["art_oovs"] = np.array(
        [ex.article_oovs + [""] * (max_oovs - len(ex.article_oovs)) for ex in examples],
        dtype=object,
    ).reshape(size, max_oovs)
    for i, ex in enumerate(examples):
        batch["enc_batch"][i, : ex.enc_len] = ex.enc_input
        batch["enc_padding_mask"][i, : ex.enc_len] = 1.0
        batch["enc_batch_extend_vocab"][i, : ex.enc_len] = ex.enc_input_extend_vocab
        batch["dec_batch"][i, : ex.dec_len] = ex.dec_input
        batch["target_batch"][i, : ex.dec_len] = ex.target
        batch["dec_padding_mask"][i, : ex.dec_len] = 1.0
    batch["original_articles"] = np.array([ex.original_article for ex in examples], object)
    batch["original_abstracts"] = np.array([ex.original_abstract for ex in examples], object)
    batch["original_abstract_sents"] = np.array(
        ["\n".join(ex.original_abstract_sents) for ex in examples], object
    )
    return batch


class Batcher:
    """Yields padded batches from ``.bin`` chunks, as the original's ``Batcher`` does.

    Args:
      data_path: glob of ``.bin`` files.
      vocab: a ``Vocab``.
      batch_size: examples per batch.
      max_enc_steps, max_dec_steps: truncation lengths (per curriculum phase).
      pointer_gen: build extended-vocabulary ids.
      single_pass: read the files once in sorted order, no bucketing, keep the last
        partial batch; otherwise loop forever over reshuffled files.
      bucketing: sort the batches of a loop over the files by length (training); False:
        batches in reading order (a decode without ``single_pass``).
      seed: seed of the file-order and batch-order shuffles.
      pad_encoder: pad every article to ``max_enc_steps``, not to the batch's longest
        (``--jit_compile``: XLA compiles one program per shape).
    """

    def __init__(
        self,
        data_path: str,
        vocab: vocab_lib.Vocab,
        batch_size: int,
        max_enc_steps: int,
        max_dec_steps: int,
        pointer_gen: bool = True,
        single_pass: bool = False,
        seed: int = 111,
        pad_encoder: bool = False,
        bucketing: bool = True,
    ) -> None:
        self.paths = bin_files.expand_data_path(data_path)
        self.vocab = vocab
        self.batch_size = batch_size
        self.max_enc_steps = max_enc_steps
        self.max_dec_steps = max_dec_steps
        self.pointer_gen = pointer_gen
        self.single_pass = single_pass
        self.bucketing = bucketing and not single_pass
        self.rng = random.Random(seed)
        self.skipped = 0
        self.enc_steps = max_enc_steps if pad_encoder else None

    def pairs(self) -> Iterator[Tuple[str, List[str]]]:
        """``(article, abstract_sentences)`` of every usable example, in reading order.

        Raises:
          bin_files.BinFileError: a whole pass over the files found no usable example
            (training would otherwise wait forever for a batch).
        """
        while True:
            paths = list(self.paths)
            if not self.single_pass:
                self.rng.shuffle(paths)
            usable = 0
            for path in paths:
                for index, (article, abstract) in enumerate(bin_files.read_bin_file(path)):
                    sentences = vocab_lib.abstract2sents(abstract)
                    problem = unusable_pair(article, abstract, sentences)
                    if problem:
                        self._skip(path, index, problem)
                        continue
                    usable += 1
                    yield article, sentences
            if not usable and not self.single_pass:
                raise bin_files.BinFileError(
                    "%s: no usable example in %d file(s) (%d skipped: empty articles, empty "
                    "abstracts or abstracts without <s> </s> sentence tags); rebuild the "
                    "files with data_prep or point --data_path at others"
                    % (", ".join(sorted(paths)), len(paths), self.skipped)
                )
            if self.single_pass:
                return

    def _skip(self, path, index, problem):
        """Counts a skipped record; logs the first few, then every 1,000th."""
        self.skipped += 1
        if self.skipped <= SKIPS_LOGGED or self.skipped % 1000 == 0:
            logging.warning(
                "%s: record %d %s; skipped (%d so far%s)",
                path,
                index,
                problem,
                self.skipped,
                ", only every 1,000th is logged from here" if self.skipped == SKIPS_LOGGED else "",
            )

    def examples(self) -> Iterator[Example]:
        """``Example`` objects in reading order."""
        for article, sentences in self.pairs():
            yield Example(
                article,
                sentences,
                self.vocab,
                self.max_enc_steps,
                self.max_dec_steps,
                self.pointer_gen,
            )

    def batches(self) -> Iterator[Dict[str, np.ndarray]]:
        """Padded NumPy batches (dicts keyed as ``BATCH_SIGNATURE``)."""
        pad_id = self.vocab.word2id(see_vocab.PAD_TOKEN)
        if not self.bucketing:
            chunk = []
            for example in self.examples():
                chunk.append(example)
                if len(chunk) == self.batch_size:
                    yield make_batch(chunk, pad_id, self.max_dec_steps, self.enc_steps)
                    chunk = []
            if chunk:
                yield make_batch(chunk, pad_id, self.max_dec_steps, self.enc_steps)
            return
        pool, pool_size = [], self.batch_size * BUCKET_CACHE_SIZE
        for example in self.examples():
            pool.append(example)
            if len(pool) == pool_size:
                yield from self._bucketed(pool, pad_id)
                pool = []

    def _bucketed(self, pool, pad_id):
        pool.sort(key=lambda ex: ex.enc_len)
        groups = [pool[i : i + self.batch_size] for i in range(0, len(pool), self.batch_size)]
        self.rng.shuffle(groups)
        for group in groups:
            yield make_batch(group, pad_id, self.max_dec_steps, self.enc_steps)

    def dataset(self) -> tf.data.Dataset:
        """A prefetching ``tf.data.Dataset`` of the batches, to iterate once.

        The first batch is read here, so unusable data raises ``BinFileError`` (with the
        files and the fix) in the caller rather than deep inside ``tf.data``.
        """
        stream = self.batches()
        first = next(stream, None)

        def batches():
            if first is not None:
                yield first
                yield from stream

        return tf.data.Dataset.from_generator(batches, output_signature=BATCH_SIGNATURE).prefetch(4)

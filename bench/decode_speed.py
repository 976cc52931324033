"""Beam-search decoding speed: many articles per call against one at a time.

The original decodes one article per beam (a Python loop around a one-step graph). This
script builds a pointer-generator (random weights, fixed seed; ``--size=paper`` is
vocab 50k, emb 128, hidden 256), decodes the same articles of ``--article_len`` tokens
with beam 5, max 120 and min 35 steps, once in batches of ``--decode_batch_size`` and the
first ``--single_articles`` of them one article at a time, asserts that the decoded ids are
identical, and reports summaries per second for both, their ratio, the time the batched
rate gives for the CNN/DailyMail test set (11,490 articles) and the peak memory (the
process's resident set; on a GPU also each mode's peak GPU memory). ``--jit_compile``
and ``--mixed_precision`` apply as in training. The table goes to bench/results/.

Usage: python bench/decode_speed.py [--size=paper|small] [--articles=16]
  [--single_articles=16] [--coverage] [--jit_compile] [--mixed_precision]
"""

import os
import resource
import sys
import time

import numpy as np
import tensorflow as tf
from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from pointer_generator import decode as decode_lib
from pointer_generator import model as model_lib

import _report as report

flags.DEFINE_enum("size", "paper", ["paper", "small"], "Model size.")
flags.DEFINE_integer("articles", 16, "Articles to decode batched.")
flags.DEFINE_integer(
    "single_articles", 16, "How many of them to decode one at a time as well (and compare)."
)
flags.DEFINE_integer("decode_batch_size", 16, "Articles per batched call.")
flags.DEFINE_integer("article_len", 400, "Tokens per article.")
flags.DEFINE_integer("beam_size", 5, "Beam width.")
flags.DEFINE_integer("max_dec_steps", 120, "Longest summary.")
flags.DEFINE_integer("min_dec_steps", 35, "Shortest summary.")
flags.DEFINE_boolean(
    "coverage", False, "Decode with the coverage feature (the paper's final models)."
)
FLAGS = flags.FLAGS
acvi_flags.define_flags(FLAGS)  # the shared flags: precision, XLA, seed
CNN_DM_TEST_ARTICLES = 11490

SIZES = {"paper": (50000, 128, 256), "small": (5000, 64, 128)}


class _Vocab:
    """The ids the summarizer needs, without a vocab file."""

    def __init__(self, size):
        self._size = size

    def word2id(self, word):
        return {"[UNK]": 0, "[PAD]": 1, "[START]": 2, "[STOP]": 3}.get(word, 0)

    def size(self):
        return self._size

    def id2word(self, word_id):
        return "w%d" % word_id


def _articles(vocab_size):
    rng = np.random.default_rng(0)
    n, length = FLAGS.articles, FLAGS.article_len
    enc = rng.integers(4, vocab_size, size=(n, length)).astype(np.int32)
    ext = enc.copy()
    ext[:, ::50] = vocab_size  # one article OOV, repeated
    enc[:, ::50] = 0
    return dict(
        enc_batch=enc,
        enc_padding_mask=np.ones((n, length), np.float32),
        enc_batch_extend_vocab=ext,
        max_art_oovs=np.int32(1),
        art_oovs=np.array([["oov"]] * n, object),
    )


def _decode_all(summarizer, batch, per_call, count):
    """Decodes the first ``count`` articles ``per_call`` at a time: ``(ids, seconds,
    peak GPU MiB or None)``."""
    if report.has_gpu():
        tf.config.experimental.reset_memory_stats("GPU:0")
    ids = []
    start = time.perf_counter()
    for lo in range(0, count, per_call):
        part = {k: (v[lo : lo + per_call] if np.ndim(v) else v) for k, v in batch.items()}
        ids.extend(r["ids"] for r in summarizer.decode(part))
    seconds = time.perf_counter() - start
    peak = (
        tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20
        if report.has_gpu()
        else None
    )
    return ids, seconds, peak


def main(argv):
    del argv
    acvi_flags.configure_runtime(FLAGS)
    keras.utils.set_random_seed(1)
    vocab_size, emb, hidden = SIZES[FLAGS.size]
    model = model_lib.PointerGenerator(
        vocab_size, hidden, emb, trunc_norm_init_std=0.05, jit_compile=FLAGS.jit_compile
    )
    batch = _articles(vocab_size)
    model(
        {
            "enc_batch": batch["enc_batch"][:1],
            "enc_padding_mask": batch["enc_padding_mask"][:1],
            "dec_batch": np.ones((1, 1), np.int32),
        }
    )
    summarizer = decode_lib.Summarizer(
        model,
        _Vocab(vocab_size),
        FLAGS.beam_size,
        FLAGS.max_dec_steps,
        FLAGS.min_dec_steps,
        coverage_on=FLAGS.coverage,
        jit_compile=FLAGS.jit_compile,
        record_attention=False,
    )  # as single_pass decodes
    for per_call in (FLAGS.decode_batch_size, 1):  # trace both shapes first
        summarizer.decode({k: (v[:per_call] if np.ndim(v) else v) for k, v in batch.items()})
    batched_ids, batched_secs, batched_mib = _decode_all(
        summarizer, batch, FLAGS.decode_batch_size, FLAGS.articles
    )
    single = min(FLAGS.single_articles, FLAGS.articles)
    single_ids, single_secs, single_mib = _decode_all(summarizer, batch, 1, single)
    assert batched_ids[:single] == single_ids, "batched and one-at-a-time outputs differ"
    mean_len = np.mean([len(i) for i in batched_ids])
    batched_rate, single_rate = FLAGS.articles / batched_secs, single / single_secs
    rows = [
        [
            FLAGS.size,
            "%d x %d tok" % (FLAGS.articles, FLAGS.article_len),
            "%d/%d/%d" % (FLAGS.beam_size, FLAGS.max_dec_steps, FLAGS.min_dec_steps),
            "%.1f" % mean_len,
            "%.3f" % single_rate,
            "%.3f" % batched_rate,
            "%.1fx" % (batched_rate / single_rate),
            "%.1f" % (CNN_DM_TEST_ARTICLES / batched_rate / 60),
            "yes (%d)" % single,
        ]
        + (["%.0f / %.0f" % (single_mib, batched_mib)] if batched_mib is not None else [])
    ]
    header = [
        "size",
        "articles",
        "beam/max/min",
        "mean summary len",
        "summaries/s one at a time",
        "summaries/s batched (%d per call)" % FLAGS.decode_batch_size,
        "speed-up",
        "CNN/DM test set, min",
        "identical ids",
    ] + (["peak GPU MiB (one / batched)"] if batched_mib is not None else [])
    settings = report.settings(FLAGS)[2:] or "float32, no XLA"
    report.emit(
        "Beam-search decoding",
        header,
        rows,
        [
            "Settings: %s%s; process peak RSS %d MB."
            % (
                settings,
                ", coverage" if FLAGS.coverage else "",
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            )
        ],
        config=(FLAGS.size, "coverage" if FLAGS.coverage else "", report.settings(FLAGS)),
    )


if __name__ == "__main__":
    app.run(main)

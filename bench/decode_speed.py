"""Beam-search decoding speed: many articles per call against one at a time.

The original decodes one article per beam (a Python loop around a one-step graph). This
script decodes the same articles once in batches of ``--decode_batch_size`` and the first
``--single_articles`` of them one article at a time, asserts that the decoded ids are
identical, and reports, over ``--rounds`` interleaved rounds, the CPU time
(``time.process_time``, both cores) and wall time per summary of both modes and their
ratio (median and range of the per-round ratios), the time the batched rate gives for the
CNN/DailyMail test set (11,490 articles) and the peak memory (the process's resident set;
on a GPU also each mode's peak GPU memory).

Models (``--size``):

* ``trained``: a pointer-generator (vocab 10k, emb 64, hidden 128, 80/20 tokens, soft
  attention) trained here with Adam for ``--train_steps`` steps from a fixed seed on the
  shipped Debian descriptions, decoding the 400 articles of their test split with the
  demo's beam 4, max 20 and min 3 steps. Its summaries stop at varied lengths, as a
  trained model's do.
* ``paper`` (vocab 50k, emb 128, hidden 256) and ``small`` (vocab 5k, emb 64, hidden 128):
  random weights (fixed seed) on random articles of ``--article_len`` tokens, beam 5, max
  120 and min 35 steps. Random weights never emit [STOP], so every summary runs every step
  (the worst case).

``--jit_compile`` and ``--mixed_precision`` apply as in training; ``--compare_precision``
also decodes batched with a copy of the model built under that precision, and reports its
time against float32's and how many summaries are identical. The table goes to
bench/results/.

Usage: python bench/decode_speed.py [--size=trained|paper|small] [--articles=16]
  [--single_articles=16] [--rounds=3] [--coverage] [--jit_compile]
  [--mixed_precision=none|float16|bfloat16] [--compare_precision=bfloat16]
"""

import os
import resource
import statistics
import sys
import time

import numpy as np
import tensorflow as tf
from absl import flags, logging

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from acvi_tf import builders
from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from pointer_generator import batcher as batcher_lib
from pointer_generator import decode as decode_lib
from pointer_generator import losses as losses_lib
from pointer_generator import model as model_lib
from pointer_generator import vocab as vocab_lib

import _report as report

CNN_DM_TEST_ARTICLES = 11490

SIZES = {"paper": (50000, 128, 256), "small": (5000, 64, 128), "trained": (10000, 64, 128)}
SAMPLE = os.path.join(report.ROOT, "data_prep", "samples", "debian_descriptions")
TRAINED_ENC_STEPS, TRAINED_DEC_STEPS = 80, 20
TRAINED_DECODE = dict(beam_size=4, max_dec_steps=20, min_dec_steps=3)  # the demo's


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this benchmark's flags and the shared ones (precision, XLA, seed) on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_enum(
        "size", "paper", ["trained", "paper", "small"], "Model (see above).", flag_values=fv
    )
    flags.DEFINE_enum(
        "compare_precision",
        None,
        ["float16", "bfloat16"],
        "Also decode batched with a copy of the model built under this --mixed_precision, "
        "and compare its time and summaries with the float32 model's.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "articles", 16, "Articles to decode batched (random-weight sizes).", flag_values=fv
    )
    flags.DEFINE_integer(
        "single_articles",
        16,
        "How many of them to decode one at a time as well (and compare).",
        flag_values=fv,
    )
    flags.DEFINE_integer("decode_batch_size", 16, "Articles per batched call.", flag_values=fv)
    flags.DEFINE_integer(
        "article_len", 400, "Tokens per article (random-weight sizes).", flag_values=fv
    )
    flags.DEFINE_integer(
        "beam_size", 5, "Beam width (trained: the demo's 4 unless given).", flag_values=fv
    )
    flags.DEFINE_integer(
        "max_dec_steps", 120, "Longest summary (trained: 20 unless given).", flag_values=fv
    )
    flags.DEFINE_integer(
        "min_dec_steps", 35, "Shortest summary (trained: 3 unless given).", flag_values=fv
    )
    flags.DEFINE_integer("rounds", 3, "Interleaved timed rounds of both modes.", flag_values=fv)
    flags.DEFINE_integer("train_steps", 300, "Adam steps of the trained model.", flag_values=fv)
    flags.DEFINE_boolean(
        "coverage",
        False,
        "Decode with the coverage feature (the paper's final models).",
        flag_values=fv,
    )
    acvi_flags.define_flags(fv)


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


def _random_articles(config, vocab_size):
    rng = np.random.default_rng(0)
    n, length = config.articles, config.article_len
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


def _random_model(config):
    """``(model, vocab, articles)``: random weights at ``--size``, random articles."""
    vocab_size, emb, hidden = SIZES[config.size]
    return _model(config, vocab_size), _Vocab(vocab_size), _random_articles(config, vocab_size)


def _model(config, vocab_size):
    """A pointer-generator of ``--size`` (weights random until trained or copied)."""
    _, emb, hidden = SIZES[config.size]
    options = {} if config.size == "trained" else dict(trunc_norm_init_std=0.05)
    return model_lib.PointerGenerator(
        vocab_size, hidden, emb, jit_compile=config.jit_compile, **options
    )


def _build(model, batch):
    """Runs ``model`` once on the first article, which creates its weights."""
    model(
        {
            "enc_batch": batch["enc_batch"][:1],
            "enc_padding_mask": batch["enc_padding_mask"][:1],
            "dec_batch": np.ones((1, 1), np.int32),
        }
    )


def _copy_in_precision(config, model, batch):
    """``model`` built again under ``--compare_precision``'s policy, with its weights."""
    keras.mixed_precision.set_global_policy(builders.precision_policy(config.compare_precision))
    copy = _model(config, model.vocab_size)
    _build(copy, batch)
    copy.set_weights(model.get_weights())
    keras.mixed_precision.set_global_policy(builders.precision_policy(config.mixed_precision))
    return copy


def _sample_batches(config, pattern, vocab, batch_size, single_pass):
    return batcher_lib.Batcher(
        os.path.join(SAMPLE, "chunked", pattern),
        vocab,
        batch_size,
        TRAINED_ENC_STEPS,
        TRAINED_DEC_STEPS,
        single_pass=single_pass,
        seed=config.seed,
    ).batches()


def _trained_model(config):
    """``(model, vocab, articles)``: ``--train_steps`` Adam steps on the Debian sample's
    training split, and its whole test split as one batch (padded to its longest)."""
    vocab = vocab_lib.Vocab(os.path.join(SAMPLE, "vocab"), SIZES["trained"][0])
    model = _model(config, vocab.size())
    optimizer = keras.optimizers.Adam(3e-3)
    fields = decode_lib.DECODE_FIELDS + ("dec_batch", "target_batch", "dec_padding_mask")

    @tf.function(reduce_retracing=True, autograph=False)
    def train_step(batch):
        with tf.GradientTape() as tape:
            loss = losses_lib.compute_losses(model(batch, training=True), batch)["total_loss"]
        variables = model.trainable_variables
        grads, _ = tf.clip_by_global_norm(tape.gradient(loss, variables), 2.0)
        optimizer.apply_gradients([(g, v) for g, v in zip(grads, variables) if g is not None])
        return loss

    start = time.perf_counter()
    for step, batch in enumerate(_sample_batches(config, "train_*", vocab, 16, single_pass=False)):
        loss = train_step({k: batch[k] for k in fields})
        if step + 1 == config.train_steps:
            break
    logging.info(
        "trained %d steps in %.0f s, last loss %.3f",
        config.train_steps,
        time.perf_counter() - start,
        float(loss),
    )
    (test,) = _sample_batches(config, "test_*", vocab, 400, single_pass=True)
    articles = {k: test[k] for k in decode_lib.DECODE_FIELDS + ("art_oovs",)}
    return model, vocab, articles


def _decode_all(summarizer, batch, per_call, count):
    """Decodes the first ``count`` articles ``per_call`` at a time: ``(ids, CPU seconds,
    wall seconds, peak GPU MiB or None)``."""
    if report.has_gpu():
        tf.config.experimental.reset_memory_stats("GPU:0")
    ids = []
    cpu, wall = time.process_time(), time.perf_counter()
    for lo in range(0, count, per_call):
        part = {k: (v[lo : lo + per_call] if np.ndim(v) else v) for k, v in batch.items()}
        ids.extend(r["ids"] for r in summarizer.decode(part))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = (
        tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20
        if report.has_gpu()
        else None
    )
    return ids, cpu, wall, peak


def _half_cells(times, ids, half_ids):
    """The ``--compare_precision`` columns: its batched CPU time per summary, its ratio to
    float32's (per round) and the share of summaries identical to float32's."""
    ratios = [h / b for h, b in zip(times["half_cpu"], times["batched_cpu"])]
    same = sum(a == b for a, b in zip(ids, half_ids))
    return [
        _spread([1e3 * t for t in times["half_cpu"]]),
        "%.2f (%.2f-%.2f)" % (statistics.median(ratios), min(ratios), max(ratios)),
        "%d of %d" % (same, len(ids)),
    ]


def _spread(values):
    return "%.3g (%.3g-%.3g)" % (statistics.median(values), min(values), max(values))


def run(config: config_lib.Config) -> None:
    """Decodes batched and one article at a time, interleaved, and writes the results table.

    Args:
      config: the parsed flags (``define_flags``).
    """
    builders.configure_runtime(config)
    keras.utils.set_random_seed(1)
    trained = config.size == "trained"
    if trained:
        config = config.replace(
            **{name: value for name, value in TRAINED_DECODE.items() if name not in config.given}
        )
    model, vocab, batch = _trained_model(config) if trained else _random_model(config)
    articles = len(batch["enc_batch"])
    _build(model, batch)

    def summarizer_of(model):
        return decode_lib.Summarizer(
            model,
            vocab,
            config.beam_size,
            config.max_dec_steps,
            config.min_dec_steps,
            coverage_on=config.coverage,
            jit_compile=config.jit_compile,
            record_attention=False,
        )  # as single_pass decodes

    summarizer = summarizer_of(model)
    half = (
        summarizer_of(_copy_in_precision(config, model, batch))
        if config.compare_precision
        else None
    )
    per_call = min(config.decode_batch_size, articles)
    single = min(config.single_articles, articles)
    _decode_all(summarizer, batch, per_call, per_call)  # trace both shapes first
    _decode_all(summarizer, batch, 1, 1)
    if half:
        _decode_all(half, batch, per_call, per_call)
    times = dict(batched_cpu=[], batched_wall=[], single_cpu=[], single_wall=[], half_cpu=[])
    for _ in range(config.rounds):
        batched_ids, cpu, wall, batched_mib = _decode_all(summarizer, batch, per_call, articles)
        times["batched_cpu"].append(cpu / articles)
        times["batched_wall"].append(wall / articles)
        single_ids, cpu, wall, single_mib = _decode_all(summarizer, batch, 1, single)
        times["single_cpu"].append(cpu / single)
        times["single_wall"].append(wall / single)
        assert batched_ids[:single] == single_ids, "batched and one-at-a-time outputs differ"
        if half:
            half_ids, cpu, _, _ = _decode_all(half, batch, per_call, articles)
            times["half_cpu"].append(cpu / articles)
    lengths = [len(i) for i in batched_ids]
    cpu_ratios = [s / b for s, b in zip(times["single_cpu"], times["batched_cpu"])]
    wall_ratios = [s / b for s, b in zip(times["single_wall"], times["batched_wall"])]
    batched_wall = statistics.median(times["batched_wall"])
    model_name = (
        "trained %d steps" % config.train_steps if trained else "%s, random weights" % config.size
    )
    rows = [
        [
            model_name,
            "%d x %d tok" % (articles, batch["enc_batch"].shape[1]),
            "%d/%d/%d" % (config.beam_size, config.max_dec_steps, config.min_dec_steps),
            "%.1f (%d-%d)" % (np.mean(lengths), min(lengths), max(lengths)),
            _spread([1e3 * t for t in times["single_cpu"]]),
            _spread([1e3 * t for t in times["batched_cpu"]]),
            "%.2fx (%.2f-%.2f)" % (statistics.median(cpu_ratios), min(cpu_ratios), max(cpu_ratios)),
            "%.2fx (%.2f-%.2f)"
            % (statistics.median(wall_ratios), min(wall_ratios), max(wall_ratios)),
            "%.1f" % (CNN_DM_TEST_ARTICLES * batched_wall / 60),
            "yes (%d)" % single,
        ]
        + (_half_cells(times, batched_ids, half_ids) if half else [])
        + (["%.0f / %.0f" % (single_mib, batched_mib)] if batched_mib is not None else [])
    ]
    header = [
        "model",
        "articles",
        "beam/max/min",
        "summary len, mean (range)",
        "CPU ms / summary, one at a time",
        "CPU ms / summary, batched (%d per call)" % per_call,
        "speed-up, CPU time",
        "speed-up, wall",
        "CNN/DM test set at this rate, min",
        "identical ids",
    ]
    if half:
        header += [
            "CPU ms / summary, batched in %s" % config.compare_precision,
            "%s / float32, CPU time" % config.compare_precision,
            "summaries equal to float32's",
        ]
    header += ["peak GPU MiB (one / batched)"] if batched_mib is not None else []
    settings = report.settings(config)[2:] or "float32, no XLA"
    report.emit(
        "Beam-search decoding",
        header,
        rows,
        [
            "Settings: %s%s; %d interleaved rounds, median (min-max) over them; the "
            "speed-ups are the per-round ratios; process peak RSS %d MB."
            % (
                settings,
                ", coverage" if config.coverage else "",
                config.rounds,
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            )
        ],
        config=(
            config.size,
            "coverage" if config.coverage else "",
            "and " + config.compare_precision if config.compare_precision else "",
            report.settings(config),
        ),
        data=times,
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

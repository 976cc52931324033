"""How noisy the gradient of ACVI's mixture sampler is on a real host batch, and what it
costs: the paper's model (``--acvi_feed=sample``: the draw feeds the next step, the
choice's score weighted by the returns to go), the same with 4 samples per example (each
sample's baseline the other three), and ``--acvi_feed=mean`` (the loop reads the
expected context; the score weighted by its step's reward alone), the same with each
step's 4 largest-weight components scored exactly (``--acvi_enumerate_top=4``), with the
expected context's step for the cost.

``--task=translation``: the NMT host on the shipped Pig Latin words. It trains one run
of the default ACVI (eq. 25's sample, ``bound`` at weight 0.001, which translates as
well as soft attention) for ``--train_steps`` steps, so that the attention is trained
and peaked, restores it, takes the first
``--batch_size`` dev pairs as the batch, and computes the gradient of the training loss
``--draws`` times per variant, each with its own draws. Dropout is off, so the draws are
the only noise. For each variant and each group of variables (the attention scorer's,
which the choice's score term reaches first, and all): the relative variance
``E||g - mean g||^2 / ||mean g||^2`` of one draw's gradient, the number of draws whose
average has as much noise as signal, and the CPU milliseconds per gradient (traced, the
median over the draws, in this process: CPU time, so that other work on the machine
does not move it).

The variants estimate the gradients of two objectives (the bound of the paper's model
and that of the mean-fed one), so the comparison is of each estimator's noise relative
to its own signal.

``--task=captioning``: the same with the captioner on the shipped moving-shapes clips (8
frames, the study's sizes without dropout) and a batch of validation captions;
``--task=summarization`` with the summarizer on the shipped Debian descriptions (the
study's sizes, no coverage) and a batch of validation pairs.

Usage: python bench/acvi_gradient_variance.py [--task=translation|captioning] [--train_steps=400]
  [--draws=200] [--batch_size=64] [--seed=1]
"""

import os
import sys
import tempfile
import time
from typing import Dict, List, Tuple

import numpy as np
import tensorflow as tf
from absl import flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import compare_contexts

from acvi_tf import config as config_lib
from acvi_tf.compat import keras
from acvi_tf.formats import bin_files, nmt_text
from acvi_tf.runner import restoring, runner
from acvi_tf.training import objective
from nmt import data as nmt_data
from nmt import experiment as nmt_experiment
from nmt import task as nmt_task
from pointer_generator import batcher
from pointer_generator import experiment as pg_experiment
from pointer_generator import task as pg_task
from pointer_generator import vocab as pg_vocab
from video_caption import experiment as vc_experiment
from video_caption import task as vc_task

import _report as report

SAMPLES = os.path.join(report.ROOT, "data_prep", "samples")
# name -> (the layer's settings, samples per example), each at the run's KL term and weight
VARIANTS = {
    "feed sample (the paper's model)": (dict(sampling="mixture", feed="sample"), 1),
    "feed sample, 4 samples per example": (dict(sampling="mixture", feed="sample"), 4),
    "feed mean": (dict(sampling="mixture", feed="mean"), 1),
    "feed mean, 4 largest components scored exactly": (
        dict(sampling="mixture", feed="mean", enumerate_top=4),
        1,
    ),
}


# The variables of Bahdanau's scorer, v^T tanh(W_h h_i + W_s s_t + b), by name (the
# summarizer's and the captioner's); Luong's general scorer is NMT's W.
BAHDANAU = ("/W_h/", "/attention/W_s/", "/attention/v/")


# A task's model, its batch and which of its trainable variables are the scorer's.
Task = Tuple[keras.Model, Dict[str, tf.Tensor], List[bool]]


def _scorer(model: keras.Model, *names: str) -> List[bool]:
    """Which of ``model``'s trainable variables are its attention scorer's: the ones the
    component choice's score term reaches first."""
    chosen = [any(name in v.name for name in names) for v in model.trainable_variables]
    if not any(chosen):
        raise ValueError("no variable of %s is named %s" % (model.name, " or ".join(names)))
    return chosen


def translation(out_dir: str, train_steps: int, batch_size: int, seed: int) -> Task:
    """The trained NMT model (the study's, ``compare_contexts.translation_flags``) and a
    batch of Pig Latin dev pairs.

    Returns:
      ``(model, batch, which of its trainable variables are the scorer's)``.
    """
    argv = ["run_nmt", *compare_contexts.translation_flags(out_dir, seed, train_steps)]
    config = config_lib.parse(nmt_task.define_flags, argv + ["--context=acvi"])
    runner.run(nmt_task.TASK, config)
    vocabs = nmt_experiment.load_vocabs(config)
    model = nmt_experiment.build_model(config, vocabs)
    restoring.restore(nmt_task.TASK, config, model, vocabs, newest=True)
    source = tuple("%s.%s" % (config.dev_prefix, lang) for lang in (config.src, config.tgt))
    examples = nmt_data.make_examples(nmt_text.read_parallel(*source), *vocabs)
    batch = next(iter(nmt_data.eval_dataset(examples[:batch_size], batch_size, source)))
    return model, batch, _scorer(model, "/W/kernel")


def captioning(out_dir: str, train_steps: int, batch_size: int, seed: int) -> Task:
    """The trained captioner (the study's, ``compare_contexts.captioning_flags``, without
    dropout) and a batch of moving-shapes validation captions.

    Returns:
      ``(model, batch, which of its trainable variables are the scorer's)``.
    """
    argv = ["run_captioning", *compare_contexts.captioning_flags(out_dir, seed)]
    argv += ["--dropout=0.0", "--max_steps=%d" % train_steps, "--context=acvi"]
    argv += ["--valid_every=%d" % train_steps, "--checkpoint_steps=%d" % train_steps]
    config = config_lib.parse(vc_task.define_flags, argv)
    runner.run(vc_task.TASK, config)
    exp = vc_experiment.Experiment(vc_task.TASK, config)
    restoring.restore(vc_task.TASK, config, exp.model, exp.vocab, config.ckpt)
    clips = exp.split("val")
    batch = next(iter(clips.caption_batches(clips.caption_pairs(exp.vocab), batch_size)))
    return exp.model, batch, _scorer(exp.model, *BAHDANAU)


def summarization(out_dir: str, train_steps: int, batch_size: int, seed: int) -> Task:
    """The trained summarizer (the study's, ``compare_contexts.summarization_flags``) and
    a batch of the Debian descriptions' validation pairs.

    Returns:
      ``(model, batch, which of its trainable variables are the scorer's)``.
    """
    sample = os.path.join(SAMPLES, "debian_descriptions")
    chunks = os.path.join(sample, "chunked")
    argv = ["run_summarization", "--data_path=" + os.path.join(chunks, "train_*")]
    argv += compare_contexts.summarization_flags(
        sample, os.path.join(out_dir, "run"), seed, train_steps
    )
    config = config_lib.parse(pg_task.define_flags, argv + ["--context=acvi"])
    runner.run(pg_task.TASK, config)
    vocab = pg_vocab.Vocab(config.vocab_path, config.vocab_size)
    model = pg_experiment.build_model(config, vocab)
    restoring.restore(pg_task.TASK, config, model, vocab, newest=True)
    pairs = list(bin_files.read_bin_file(os.path.join(chunks, "val_000.bin")))[:batch_size]
    examples = [
        batcher.Example(
            article,
            pg_vocab.abstract2sents(abstract),
            vocab,
            config.max_enc_steps,
            config.max_dec_steps,
        )
        for article, abstract in pairs
    ]
    padded = batcher.make_batch(examples, vocab.word2id("[PAD]"), config.max_dec_steps)
    batch = {name: tf.constant(padded[name]) for name in batcher.BATCH_SIGNATURE}
    return model, batch, _scorer(model, *BAHDANAU)


TASKS = {"translation": translation, "captioning": captioning, "summarization": summarization}


def gradient_draws(
    model: keras.Model,
    batch: Dict[str, tf.Tensor],
    variables: List[tf.Variable],
    draws: int,
    training: bool = True,
) -> Tuple[np.ndarray, float]:
    """``draws`` gradients of the training loss [draws, P] and the CPU ms each took
    (without ``training``: the context layer's expected context, no draw)."""
    step = tf.constant(0, tf.int64)

    @tf.function
    def gradient(batch):
        with tf.GradientTape() as tape:
            out = model(batch, training=training)
            loss = model.compute_loss(batch, out, step)[model.loss_key]
        grads = tape.gradient(loss, variables, unconnected_gradients="zero")
        return tf.concat([tf.reshape(g, [-1]) for g in grads], 0)

    gradient(batch)  # the trace
    rows, times = [], []
    for _ in range(draws):
        start = time.process_time()
        rows.append(gradient(batch).numpy())
        times.append(1000 * (time.process_time() - start))
    return np.array(rows, np.float64), float(np.median(times))


def relative_variance(rows: np.ndarray) -> float:
    """``E||g - mean g||^2 / ||mean g||^2`` of one row of ``rows`` [draws, P]."""
    mean = rows.mean(0)
    return float(np.sum(rows.var(0, ddof=1)) / np.sum(mean * mean))


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this script's flags on ``fv``."""
    flags.DEFINE_enum("task", "translation", list(TASKS), "The host.", flag_values=fv)
    flags.DEFINE_integer("train_steps", 400, "Steps of the shared run.", flag_values=fv)
    flags.DEFINE_integer("draws", 200, "Gradients per variant.", lower_bound=3, flag_values=fv)
    flags.DEFINE_integer("batch_size", 64, "Dev pairs in the batch.", flag_values=fv)
    flags.DEFINE_integer("seed", 1, "The run's and the draws' seed.", flag_values=fv)


def run(config: config_lib.Config) -> None:
    """Trains the shared run, measures every variant, keeps the table."""
    with tempfile.TemporaryDirectory() as out_dir:
        model, batch, scorer = TASKS[config.task](
            out_dir, config.train_steps, config.batch_size, config.seed
        )
    layer = model.context_layer
    tf.random.set_seed(config.seed)
    layer.generator.reset_from_seed(config.seed)
    rows, data = [], {}
    everything = model.trainable_variables
    columns = np.concatenate(
        [np.full(int(np.prod(v.shape)), chosen) for v, chosen in zip(everything, scorer)]
    )
    for name, (settings, samples) in VARIANTS.items():
        for key, value in settings.items():
            setattr(layer, key, value)
        layer.num_samples = samples
        tiled = objective.tile_batch(batch, samples)
        draws, ms = gradient_draws(model, tiled, everything, config.draws)
        group = dict(scorer=relative_variance(draws[:, columns]), all=relative_variance(draws))
        data[name] = dict(group, ms=ms)
        rows.append(
            [
                name,
                "%.3g" % group["scorer"],
                "%.3g" % group["all"],
                "%.0f" % max(1.0, group["scorer"]),
                "%.1f" % ms,
            ]
        )
    layer.num_samples = 1
    soft = gradient_draws(model, batch, everything, 3, training=False)[1]
    rows.append(["the expected context, no draw", "0", "0", "1", "%.1f" % soft])
    report.emit(
        "The mixture sampler's gradient noise on a %s batch" % config.task,
        [
            "estimator",
            "relative variance, scorer",
            "relative variance, all",
            "draws for noise = signal (scorer)",
            "CPU ms per gradient",
        ],
        rows,
        notes=[
            "Relative variance: E||g - mean g||^2 / ||mean g||^2 of one draw's gradient "
            "over %d draws per variant, at the weights of one run of the default ACVI trained "
            "%d steps (bound, weight 0.001); a batch of %d validation examples "
            "(4 samples per example: %d rows); seed %d. The last row is the same model's "
            "loss and gradient at the expected context (no draw, as soft attention), "
            "for the cost."
            % (
                config.draws,
                config.train_steps,
                config.batch_size,
                4 * config.batch_size,
                config.seed,
            )
        ],
        config=[config.task],
        data=data,
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

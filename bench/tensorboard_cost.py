"""The cost of the training job's TensorBoard posterior summaries, per host.

For each host at its demo size on the shipped sample (the summarizer as ``make demo``'s
last phase: 128 units, emb 64, 80/16 tokens, batch 16, vocab 10,000; NMT as docs/nmt.md's
En-De run: 128 units, bi encoder, Adam, batch 128, 50/50 tokens; the captioner as ``make
demo-captions``: 128 units, 8 frames, batch 32), all with ACVI, it times interleaved in
one process: the real training step on one training batch, one histogram write of the
posterior summaries (the inference pass over the fixed validation batch and the
histograms) and one image write (the pass, both images and the greedy decode of the
fixed example). The overhead at the defaults is ``histograms / step / --histogram_steps
+ images / step / --image_steps``, from the per-round ratios' medians, by the clock and
in CPU time. Rows go to BENCHMARKS.md.

Usage: python bench/tensorboard_cost.py [--tasks=summarization,translation,captioning]
  [--repeats=5]
"""

import os
import statistics
import sys
import tempfile
import types

import tensorflow as tf
from absl import flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from acvi_tf import builders
from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from acvi_tf.formats import nmt_text
from acvi_tf.training import step as training_lib
from nmt import data as nmt_data
from nmt import experiment as nmt_experiment
from nmt import jobs as nmt_jobs
from nmt import task as nmt_task
from pointer_generator import experiment as pg_experiment
from pointer_generator import jobs
from pointer_generator import task as pg_task
from pointer_generator import vocab as pg_vocab
from video_caption import experiment as vc_experiment
from video_caption import jobs as vc_jobs
from video_caption import task as vc_task

import _report as report

TASKS = ("summarization", "translation", "captioning")
SAMPLES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data_prep", "samples"
)


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this benchmark's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_list("tasks", list(TASKS), "Hosts to time, in order.", flag_values=fv)
    flags.DEFINE_integer("repeats", 5, "Timed rounds.", lower_bound=1, flag_values=fv)
    flags.register_validator(
        "tasks",
        lambda names: set(names) <= set(TASKS),
        message="--tasks: summarization, translation and/or captioning",
        flag_values=fv,
    )
    acvi_flags.define_flags(fv)


def _summarization(writer):
    """``(train step, batch, posterior summaries, config)`` of the summarizer demo."""
    data = os.path.join(SAMPLES, "debian_descriptions")
    config = config_lib.parse(
        pg_task.define_flags,
        [
            "run_summarization",
            "--mode=train",
            "--data_path=%s/chunked/train_*" % data,
            "--summary_data_path=%s/chunked/val_*" % data,
            "--vocab_path=%s/vocab" % data,
            "--vocab_size=10000",
            "--hidden_dim=128",
            "--emb_dim=64",
            "--max_enc_steps=80",
            "--max_dec_steps=16",
            "--max_steps=1",
            "--context=acvi",
        ],
    )
    vocab = pg_vocab.Vocab(config.vocab_path, config.vocab_size)
    model = pg_experiment.build_model(config, vocab)
    phase = pg_experiment.phases(config)[-1]
    batch = next(jobs.phase_batcher(config, vocab, phase, 0).batches())
    batch = {name: tf.constant(batch[name]) for name in pg_experiment.MODEL_SIGNATURE}
    step = training_lib.make_train_step(model, keras.optimizers.Adam(), norm_key="global_norm")
    run = types.SimpleNamespace(checkpoint=types.SimpleNamespace(coverage_started=False))
    posterior = jobs.posterior_summaries(config, vocab, model, phase, run, writer)
    return step, batch, posterior, config


def _translation(writer):
    """``(train step, batch, posterior summaries, config)`` of docs/nmt.md's En-De run."""
    data = os.path.join(SAMPLES, "debian_en_de")
    config = config_lib.parse(
        nmt_task.define_flags,
        ["run_nmt", "--src=en", "--tgt=de", "--out_dir=%s" % tempfile.mkdtemp()]
        + ["--%s_prefix=%s/%s" % (p, data, p) for p in ("vocab", "train", "dev")]
        + ["--num_units=128", "--encoder_type=bi", "--optimizer=adam", "--context=acvi"]
        + ["--src_max_len=50", "--tgt_max_len=50"],
    )
    vocabs = nmt_experiment.load_vocabs(config)
    model = nmt_experiment.build_model(config, vocabs)
    pairs = nmt_text.read_parallel("%s.en" % config.train_prefix, "%s.de" % config.train_prefix)
    examples = nmt_data.make_examples(pairs, *vocabs, 50, 50)
    batch = next(iter(nmt_data.eval_dataset(examples, config.batch_size)))
    step = training_lib.make_train_step(model, keras.optimizers.Adam())
    translator = nmt_experiment.build_decoder(config, model, vocabs)
    posterior = nmt_jobs.posterior_summaries(config, model, vocabs, translator, writer)
    return step, batch, posterior, config


def _captioning(writer):
    """``(train step, batch, posterior summaries, config)`` of ``make demo-captions``."""
    sample = os.path.join(SAMPLES, "moving_shapes")
    config = config_lib.parse(
        vc_task.define_flags,
        [
            "run_captioning",
            "--data_dir=%s" % sample,
            "--features=%s/features.h5" % sample,
            "--out_dir=%s" % tempfile.mkdtemp(),
            "--num_frames=8",
            "--feature_norm=standardize",
            "--encoder_units=128",
            "--decoder_units=128",
            "--emb_dim=64",
            "--attention_units=64",
            "--dropout=0.2",
            "--batch_size=32",
            "--context=acvi",
        ],
    )
    exp = vc_experiment.Experiment(vc_task.TASK, config)
    clips = exp.split("train")
    batch = next(clips.caption_batches(clips.caption_pairs(exp.vocab), config.batch_size))
    step = training_lib.make_train_step(exp.model, keras.optimizers.Adam())
    posterior = vc_jobs.posterior_summaries(exp, writer)
    return step, batch, posterior, config


def _due(posterior, histograms):
    """A call that writes only the histograms (or only the images and the text)."""

    def call():
        posterior.histogram_steps, posterior.image_steps = (1, 0) if histograms else (0, 1)
        posterior(1)

    return call


def _time_task(config, task, writer):
    """One row: the step, the two writes, their overhead at the host's defaults."""
    keras.utils.set_random_seed(1)
    step, batch, posterior, host = globals()["_" + task](writer)
    cadence = host.histogram_steps, host.image_steps
    calls = {
        "step": lambda: float(
            next(iter(step(batch, tf.constant(False), tf.constant(0, tf.int64)).values()))
        ),
        "histograms": _due(posterior, True),
        "images": _due(posterior, False),
    }
    wall, cpu = report.time_interleaved(calls, config.repeats)

    def overhead(times):
        ratios = {
            name: statistics.median(t / s for t, s in zip(times[name], times["step"]))
            for name in ("histograms", "images")
        }
        return ratios, ratios["histograms"] / cadence[0] + ratios["images"] / cadence[1]

    (ratios, total), (_, total_cpu) = overhead(wall), overhead(cpu)
    return [
        task,
        "%.0f" % (1e3 * statistics.median(wall["step"])),
        "%.0f (%.2f)" % (1e3 * statistics.median(wall["histograms"]), ratios["histograms"]),
        "%.0f (%.2f)" % (1e3 * statistics.median(wall["images"]), ratios["images"]),
        "%d / %d" % cadence,
        "%.1f%%" % (100 * total),
        "%.1f%%" % (100 * total_cpu),
    ]


def run(config: config_lib.Config) -> None:
    """Times each chosen host and writes the results table.

    Args:
      config: the parsed flags (``define_flags``).
    """
    builders.configure_runtime(config)
    tf.get_logger().setLevel("ERROR")
    writer = tf.summary.create_file_writer(tempfile.mkdtemp())
    rows = [_time_task(config, task, writer) for task in config.tasks]
    header = [
        "host",
        "ms / step",
        "histograms ms (x step)",
        "images + text ms (x step)",
        "default --histogram_steps / --image_steps",
        "overhead at the defaults",
        "CPU-time overhead",
    ]
    notes = [
        "ACVI at each host's demo size (see the script); %d interleaved rounds; one "
        "histogram write covers the fixed batch of 8, one image write the first example."
        % config.repeats
    ]
    report.emit(
        "TensorBoard posterior summaries: cost against a training step",
        header,
        rows,
        notes,
        config=config.tasks,
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

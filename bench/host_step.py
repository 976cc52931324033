"""Training-step throughput of the NMT and captioning hosts for SA and the ACVI variants.

``translation``: the NMT model's real training step (``training_lib.make_train_step``) at
the paper's size (``--hparams_preset=acvi_paper``: 256 units, a bidirectional encoder and
two decoder layers, Luong attention, dropout 0.2, SGD; batch 128, 50 source and 50 target
tokens, IWSLT'15 En-Vi's vocabularies of 17,191 and 7,709 words), in target tokens per
second and tensorflow/nmt's words per second (source and target).
``captioning``: the captioner's real training step at the paper's size (1000-unit
encoder and decoder LSTMs, 24 frames of 1,024-d GoogLeNet features, embedding 256,
attention 100, dropout 0.5, batch 64, 20-token captions, a 16,000-word vocabulary), in
clips per second.

Variants (``sa``, ``acvi`` collapsed, per-component, Gumbel-softmax and the journal's
variance network) are timed interleaved after the trace and one untimed round; the table
gives the median ms/step, the throughput, the median (and range) of the per-round ratios
to ``sa`` from the same run, and
the peak memory (the process's resident set on CPU, each variant's peak on a GPU).
``--jit_compile`` and ``--mixed_precision`` apply as in training; ``--precisions=none,bfloat16``
builds every variant under each precision as well and compares each with the first (by
the clock and in CPU time). Rows go to BENCHMARKS.md.

Usage: python bench/host_step.py [--tasks=translation,captioning] [--repeats=5]
  [--variants=...] [--jit_compile] [--mixed_precision=none|float16|bfloat16]
  [--precisions=none,bfloat16]
"""

import os
import resource
import sys

import numpy as np
import tensorflow as tf
from absl import flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from acvi_tf import builders
from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from acvi_tf.contexts import registry
from acvi_tf.training import step as training_lib
from nmt import (
    hparams,
)
from nmt import model as nmt_model
from video_caption import model as vc_model

import _report as report

VARIANTS = {
    "sa": dict(mode="sa"),
    "acvi collapsed": dict(mode="acvi", seed=1),
    "acvi per_component": dict(mode="acvi", seed=1, noise="per_component"),
    "acvi gumbel": dict(mode="acvi", seed=1, sampling="gumbel"),
    "acvi relu": dict(mode="acvi", seed=1, variance_net="relu"),
}
# translation: src vocab, tgt vocab, batch, source tokens, target tokens
NMT_SIZE = (17191, 7709, 128, 50, 50)
# captioning: vocab, batch, frames, feature dim, caption tokens, LSTM units, emb, attention
VC_SIZE = (16000, 64, 24, 1024, 20, 1000, 256, 100)


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this benchmark's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_list(
        "tasks", ["translation", "captioning"], "Hosts to time, in order.", flag_values=fv
    )
    flags.DEFINE_integer("repeats", 5, "Timed steps per variant.", lower_bound=1, flag_values=fv)
    flags.DEFINE_list(
        "variants", [], "Variants to time (default: all); sa is always timed.", flag_values=fv
    )
    flags.DEFINE_list(
        "precisions",
        [],
        "--mixed_precision values to build every variant in, timed interleaved and compared "
        "with the first (e.g. none,bfloat16); default: --mixed_precision's.",
        flag_values=fv,
    )
    flags.register_validator(
        "tasks",
        lambda names: set(names) <= {"translation", "captioning"},
        message="--tasks: translation and/or captioning",
        flag_values=fv,
    )
    flags.register_validator(
        "precisions",
        lambda names: set(names) <= set(acvi_flags.PRECISION_POLICIES),
        message="--precisions: values of --mixed_precision",
        flag_values=fv,
    )
    flags.register_validator(
        "variants",
        lambda names: set(names) <= set(VARIANTS),
        message="--variants: unknown name (see VARIANTS in this script)",
        flag_values=fv,
    )
    acvi_flags.define_flags(fv)


def _translation_batch():
    src_vocab, tgt_vocab, batch, src_len, tgt_len = NMT_SIZE
    rng = np.random.default_rng(0)
    tgt = rng.integers(3, tgt_vocab, size=(batch, tgt_len + 1)).astype(np.int32)
    return dict(
        src=rng.integers(3, src_vocab, size=(batch, src_len)).astype(np.int32),
        src_len=np.full([batch], src_len, np.int32),
        tgt_in=tgt[:, :-1],
        tgt_out=tgt[:, 1:],
        tgt_len=np.full([batch], tgt_len, np.int32),
    )


def _translation_step(layer, jit_compile):
    """NMT's training step with ``layer``, and the batch it runs on."""
    preset = hparams.PRESETS["acvi_paper"]
    src_vocab, tgt_vocab = NMT_SIZE[:2]
    model = nmt_model.NMTModel(
        src_vocab,
        tgt_vocab,
        preset["num_units"],
        preset["num_encoder_layers"],
        preset["num_decoder_layers"],
        preset["encoder_type"],
        preset["attention"],
        dropout=preset["dropout"],
        context_layer=layer,
        jit_compile=jit_compile,
    )
    batch = _translation_batch()
    model(batch)
    optimizer = keras.optimizers.SGD(preset["learning_rate"])
    optimizer.build(model.trainable_variables)
    # run_nmt's default --max_gradient_norm
    step = training_lib.make_train_step(model, optimizer, 5.0, jit_compile)
    return step, batch


def _captioning_step(layer, jit_compile):
    """The captioner's training step with ``layer``, and the batch it runs on."""
    vocab, batch_size, frames, dim, words, units, emb, attention = VC_SIZE
    model = vc_model.Captioner(
        vocab,
        units,
        units,
        emb,
        attention,
        dropout=0.5,
        context_layer=layer,
        jit_compile=jit_compile,
    )
    rng = np.random.default_rng(0)
    captions = rng.integers(4, vocab, size=(batch_size, words)).astype(np.int32)
    batch = dict(
        features=rng.normal(size=(batch_size, frames, dim)).astype(np.float32),
        num_frames=np.full([batch_size], frames, np.int32),
        caption_in=np.concatenate(
            [np.full([batch_size, 1], 2, np.int32), captions[:, :-1]], axis=1
        ),
        caption_out=captions,
        caption_len=np.full([batch_size], words, np.int32),
    )
    model(batch)
    optimizer = keras.optimizers.Adadelta(1.0)  # arctic-capgen-vid's optimizer
    optimizer.build(model.trainable_variables)
    return training_lib.make_train_step(model, optimizer, jit_compile=jit_compile), batch


def run(config: config_lib.Config) -> None:
    """Times every chosen variant of each host's training step and writes the results
    tables.

    Args:
      config: the parsed flags (``define_flags``).
    """
    builders.configure_runtime(config)
    tf.get_logger().setLevel("ERROR")
    for task in config.tasks:
        _time_task(config, task)


def _time_task(config, task):
    """Times every chosen variant of ``task``'s training step; keeps the table."""
    make_step = _translation_step if task == "translation" else _captioning_step
    steps, memory = {}, {}
    chosen = {
        name: VARIANTS[name]
        for name in VARIANTS
        if name == "sa" or not config.variants or name in config.variants
    }
    precisions = config.precisions or [config.mixed_precision]
    for precision in precisions:
        # a layer keeps the policy it was built under
        keras.mixed_precision.set_global_policy(builders.precision_policy(precision))
        for name, options in chosen.items():
            keras.utils.set_random_seed(1)
            options = dict(options)
            layer = registry.make_context_layer(options.pop("mode"), **options)
            step, batch = make_step(layer, config.jit_compile)  # the same batch for every variant
            if report.has_gpu():
                tf.config.experimental.reset_memory_stats("GPU:0")
            step(batch, tf.constant(False), tf.constant(0, tf.int64))  # trace, compile
            if report.has_gpu():
                memory[name, precision] = (
                    tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20
                )
            steps[name, precision] = step
    use_gumbel = {
        name: tf.constant(options.get("sampling") == "gumbel") for name, options in VARIANTS.items()
    }
    times, cpu = report.time_interleaved(
        {
            key: lambda step=step, key=key: float(
                next(iter(step(batch, use_gumbel[key[0]], tf.constant(1, tf.int64)).values()))
            )
            for key, step in steps.items()
        },
        config.repeats,
    )
    rows = []
    for (name, precision), values in times.items():
        median = float(np.median(values))
        baseline = "sa", precision
        if task == "translation":
            batch_size, src_len, tgt_len = NMT_SIZE[2:]
            rate = [
                "%.1f" % (batch_size * tgt_len / median / 1e3),
                "%.1f" % (batch_size * (src_len + tgt_len) / median / 1e3),
            ]
        else:
            rate = ["%.1f" % (VC_SIZE[1] / median)]
        rows.append(
            [name]
            + ([report.precision_name(precision)] if len(precisions) > 1 else [])
            + ["%.1f" % (1e3 * median)]
            + rate
            + [
                report.ratio_cell(values, times[baseline]),
                report.ratio_cell(cpu[name, precision], cpu[baseline]),
            ]
            + (
                [report.ratio_cell(cpu[name, precision], cpu[name, precisions[0]])]
                if len(precisions) > 1
                else []
            )
            + (["%.0f" % memory[name, precision]] if memory else [])
        )
    rate_header = (
        ["K target tokens / s", "K words / s (src + tgt)"]
        if task == "translation"
        else ["clips / s"]
    )
    header = (
        ["context"]
        + (["precision"] if len(precisions) > 1 else [])
        + ["median ms / step"]
        + rate_header
        + ["ratio to sa (range)", "CPU-time ratio to sa (range)"]
        + (
            ["CPU-time ratio to %s (range)" % report.precision_name(precisions[0])]
            if len(precisions) > 1
            else []
        )
        + (["peak GPU MiB"] if memory else [])
    )
    if task == "translation":
        size = (
            "acvi_paper preset (256 units, bi encoder, 2 decoder layers); batch %d, "
            "%d/%d tokens, vocab %d/%d"
            % (NMT_SIZE[2], NMT_SIZE[3], NMT_SIZE[4], NMT_SIZE[0], NMT_SIZE[1])
        )
    else:
        size = (
            "%d-unit LSTMs, emb %d, attention %d; batch %d, %d frames x %d, "
            "%d-token captions, vocab %d"
            % (
                VC_SIZE[5],
                VC_SIZE[6],
                VC_SIZE[7],
                VC_SIZE[1],
                VC_SIZE[2],
                VC_SIZE[3],
                VC_SIZE[4],
                VC_SIZE[0],
            )
        )
    notes = [
        "%s%s; %d interleaved steps per variant; process peak RSS %d MB."
        % (
            size,
            report.settings(config),
            config.repeats,
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        )
    ]
    title = "%s training step%s" % (
        "NMT" if task == "translation" else "Captioner",
        ": sa, " + ", ".join(config.variants) if config.variants else "",
    )
    key = (
        task,
        *config.variants,
        "precisions " + " ".join(precisions) if config.precisions else "",
        report.settings(config),
    )
    report.emit(title, header, rows, notes, config=key)


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

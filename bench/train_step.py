"""Pointer-generator training-step time for every context variant, with a roofline.

Builds the summarizer at ``--size=paper`` (vocab 50k, emb 128, hidden 256, batch 16,
400 article / 100 summary tokens) or ``small`` (vocab 5k, emb 64, hidden 128, batch 8,
100/25), and times the real training step of ``run_summarization`` (model, losses,
gradient clipping, the optimizer's update) on one synthetic batch for ``sa``, ``acvi``
(collapsed noise), ``acvi`` per-component noise, ``acvi`` + Gumbel-softmax and ``acvi`` with
the journal's one-layer variance network, each with and without coverage
(``--coverage_settings``). Variants are timed interleaved (A B C ... C B A ...) after the
trace and one untimed round, and the median ms/step and the median (and range) of the
per-round ratios to ``sa`` with the same coverage setting are reported. ``--variants``
picks some, including ablations: three that locate ACVI's extra time, ``ablation: no KL``
(the KL term replaced by 0), ``ablation: unit variance`` (sigma^2 = 1: no variance
network, no gradient into sigma^2) and ``ablation: noise off`` (the mean context in
training; KL and variance network kept); two that measure ``acvi_tf/contexts/loop_gradients.py``,
``ablation: sa in-loop gradients`` and ``ablation: acvi in-loop gradients`` (nothing
deferred); ``ablation: sa keras lstm encoder`` and ``ablation: acvi keras lstm encoder``
(the encoder as Keras's ``LSTM`` layer instead of ``acvi_tf.layers.recurrent.ProjectedLSTM``);
and ``ablation: sa dense coverage`` (the coverage term through the ``w_c`` Dense layer
instead of ``acvi_tf.contexts.attention.coverage_feature``).

``--precisions=none,bfloat16`` builds every variant under each precision policy as well
(float32, mixed_bfloat16) and compares each with the first. Each ratio is the median (and
range) of per-round ratios, by the clock and in CPU time.

Roofline: the machine's matmul throughput in the row's compute precision is measured with
a large ``tf.matmul``; the analytic FLOPs of one step (forward x 3 for forward and
backward) divided by the step time gives the achieved fraction of it. Memory: the process's peak
resident set (CPU) or each variant's peak GPU memory. Rows go to BENCHMARKS.md.

Usage: python bench/train_step.py [--size=paper|small] [--repeats=5] [--variants=...]
  [--coverage_settings=both|no|yes] [--mixed_precision=none|float16|bfloat16]
  [--precisions=none,bfloat16] [--jit_compile]
"""

import math
import os
import resource
import sys
import time

import numpy as np
import tensorflow as tf
from absl import flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _profile

from acvi_tf import builders
from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts import attention, loop_gradients, registry
from acvi_tf.contexts import context as context_lib
from acvi_tf.training import step as training_lib
from pointer_generator import model as model_lib
from pointer_generator import task as pg_task

import _report as report

COVERAGE_SETTINGS = {"both": (False, True), "no": (False,), "yes": (True,)}
# vocab, emb, hidden, batch, article tokens, summary tokens
SIZES = {"paper": (50000, 128, 256, 16, 400, 100), "small": (5000, 64, 128, 8, 100, 25)}
VARIANTS = {
    "sa": dict(mode="sa"),
    "acvi collapsed": dict(mode="acvi", seed=1),
    "acvi per_component": dict(mode="acvi", seed=1, noise="per_component"),
    "acvi gumbel": dict(mode="acvi", seed=1, sampling="gumbel"),
    "acvi relu": dict(mode="acvi", seed=1, variance_net="relu"),  # the journal's variance network
}


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this benchmark's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_enum("size", "paper", ["paper", "small"], "Model and batch size.", flag_values=fv)
    flags.DEFINE_integer("repeats", 5, "Timed steps per variant.", lower_bound=1, flag_values=fv)
    flags.DEFINE_list(
        "variants",
        [],
        "Variants to time (default: all but the ablations); sa is always timed.",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "coverage_settings",
        "both",
        ["both", "no", "yes"],
        "Time without coverage, with it, or both.",
        flag_values=fv,
    )
    flags.DEFINE_list(
        "precisions",
        [],
        "--mixed_precision values to build every variant in, timed interleaved and compared "
        "with the first (e.g. none,bfloat16); default: --mixed_precision's.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "profile_steps",
        0,
        "Also profile this many steps of every variant (TensorFlow's profiler) and keep "
        "where their op time goes, by part of the model and by op type.",
        lower_bound=0,
        flag_values=fv,
    )
    flags.register_validator(
        "precisions",
        lambda names: set(names) <= set(acvi_flags.PRECISION_POLICIES),
        message="--precisions: values of --mixed_precision (%s)"
        % ", ".join(acvi_flags.PRECISION_POLICIES),
        flag_values=fv,
    )
    flags.register_validator(
        "variants",
        lambda names: set(names) <= set(VARIANTS) | set(ABLATIONS),
        message="--variants: unknown name (see VARIANTS and ABLATIONS in this script)",
        flag_values=fv,
    )
    acvi_flags.define_flags(fv)


class _NoKL(acvi_lib.ACVIContext):
    """Ablation: ACVI with its KL term replaced by 0."""

    def kl_steps(self, context, probs, prepared):
        return tf.zeros(tf.shape(probs)[:2])


class _UnitVariance(acvi_lib.ACVIContext):
    """Ablation: sigma^2 = 1, so no variance network and no gradient into sigma^2."""

    def prepare(self, memory, memory_mask=None):
        base = context_lib.ContextLayer.prepare(self, memory, memory_mask)
        h, ones = base.memory, tf.ones_like(base.memory)
        log_norm = -0.5 * tf.reduce_sum(math.log(2 * math.pi) + tf.square(h), axis=-1)
        own = acvi_lib.ACVIMemory(variance=ones, precision=ones, scaled_mean=h, log_norm=log_norm)
        return base._replace(own=own)


class _NoiseOff(acvi_lib.ACVIContext):
    """Ablation: the mean context in training too; the KL and variance network stay."""

    def draw_steps(self, probs, prepared, training, use_gumbel, seed):
        return context_lib.expected_context(probs, prepared.memory)


def _in_loop_gradients(layer_class):
    """Ablation: ``layer_class`` with every gradient accumulated inside the decoder loop."""

    class InLoop(layer_class):
        def defer_contractions(self, prepared, steps, training=False, use_gumbel=None):
            return loop_gradients.DeferredContractions(prepared, steps)

    return InLoop


def _keras_lstm_encoder(model, hidden):
    """Ablation: the encoder as Keras's LSTM layer (every product inside its loop)."""
    model.encoder = keras.layers.Bidirectional(
        keras.layers.LSTM(hidden, return_sequences=True, return_state=True), name="encoder"
    )


class _DenseCoverageScorer(attention.AdditiveScorer):
    """Ablation: the coverage term as the ``w_c`` Dense layer on a size-1 axis."""

    def coverage_term(self, coverage, dtype):
        return self.coverage_projection(tf.cast(coverage, dtype)[..., tf.newaxis])


def _dense_coverage(model, hidden):
    """Ablation: ``_DenseCoverageScorer`` in place of the model's scorer."""
    model.scorer = _DenseCoverageScorer(
        2 * hidden, use_coverage=True, mask_mode=model.scorer.mask_mode, name="attention"
    )


ABLATIONS = {
    "ablation: no KL": _NoKL,
    "ablation: unit variance": _UnitVariance,
    "ablation: noise off": _NoiseOff,
    "ablation: sa in-loop gradients": _in_loop_gradients(context_lib.SoftAttentionContext),
    "ablation: acvi in-loop gradients": _in_loop_gradients(acvi_lib.ACVIContext),
    "ablation: sa keras lstm encoder": context_lib.SoftAttentionContext,
    "ablation: acvi keras lstm encoder": acvi_lib.ACVIContext,
    "ablation: sa dense coverage": context_lib.SoftAttentionContext,
}
MODEL_ABLATIONS = {
    "ablation: sa keras lstm encoder": _keras_lstm_encoder,
    "ablation: acvi keras lstm encoder": _keras_lstm_encoder,
    "ablation: sa dense coverage": _dense_coverage,
}


def step_flops(vocab: int, emb: int, hidden: int, batch: int, n: int, t: int) -> float:
    """Analytic FLOPs of one training step (multiply-adds x 2, forward x 3)."""
    h2 = 2 * hidden
    encoder = 2 * n * 4 * hidden * (emb + hidden)  # two LSTM directions
    keys = n * h2 * h2  # W_h h_i, once
    per_step = (
        (emb + h2) * emb  # input projection
        + 4 * hidden * (emb + hidden)  # decoder LSTM
        + h2 * h2
        + 2 * n * h2  # W_s [c; h], scores
        + n * h2  # the context
        + (hidden + h2) * hidden
        + hidden * vocab
    )  # W_o and V'
    return 3 * 2 * batch * (encoder + keys + t * per_step)


def matmul_peak(n: int = 2048, repeats: int = 5, dtype: tf.DType = tf.float32) -> float:
    """Measured matmul throughput (FLOP/s) in ``dtype``, median of ``repeats``."""
    a = tf.cast(tf.random.normal([n, n]), dtype)
    b = tf.cast(tf.random.normal([n, n]), dtype)
    float(tf.matmul(a, b)[0, 0])  # warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        float(tf.matmul(a, b)[0, 0])
        times.append(time.perf_counter() - start)
    return 2 * n**3 / float(np.median(times))


def _batch(vocab, batch, n, t):
    rng = np.random.default_rng(0)
    enc = rng.integers(4, vocab, size=(batch, n)).astype(np.int32)
    ext = enc.copy()
    ext[:, ::50] = vocab  # one article OOV, copied into the target below
    enc[:, ::50] = 0
    target = rng.integers(4, vocab, size=(batch, t)).astype(np.int32)
    target[:, ::10] = vocab
    return dict(
        enc_batch=enc,
        enc_lens=np.full([batch], n, np.int32),
        enc_padding_mask=np.ones((batch, n), np.float32),
        enc_batch_extend_vocab=ext,
        max_art_oovs=np.int32(1),
        dec_batch=rng.integers(4, vocab, size=(batch, t)).astype(np.int32),
        target_batch=target,
        dec_padding_mask=np.ones((batch, t), np.float32),
    )


def run(config: config_lib.Config) -> None:
    """Times every chosen variant's training step (and profiles it with
    ``--profile_steps``) and writes the results table.

    Args:
      config: the parsed flags (``define_flags``).
    """
    builders.configure_runtime(config)
    vocab, emb, hidden, batch_size, n, t = SIZES[config.size]
    batch = {
        k: v
        for k, v in _batch(vocab, batch_size, n, t).items()
        if k in model_lib.PointerGenerator.batch_signature
    }
    tf.get_logger().setLevel("ERROR")  # one trace per variant is the point, not a warning
    # run_summarization's defaults, as its command has
    summarizer = config_lib.parse(
        pg_task.define_flags, ["train_step", "--jit_compile=%s" % config.jit_compile]
    )
    steps, memory, gumbel = {}, {}, {}
    chosen = [
        name
        for name in list(VARIANTS) + list(ABLATIONS)
        if name == "sa" or name in (config.variants or VARIANTS)
    ]
    precisions = config.precisions or [config.mixed_precision]
    for precision in precisions:
        # a layer keeps the policy it was built under
        keras.mixed_precision.set_global_policy(builders.precision_policy(precision))
        for name in chosen:
            keras.utils.set_random_seed(1)
            if name in ABLATIONS:
                ablation = ABLATIONS[name]
                seeded = issubclass(ablation, acvi_lib.ACVIContext)
                layer = ablation(name="context", **({"seed": 1} if seeded else {}))
            else:
                options = dict(VARIANTS[name])
                layer = registry.make_context_layer(options.pop("mode"), **options)
            model = model_lib.PointerGenerator(
                vocab, hidden, emb, context_layer=layer, jit_compile=config.jit_compile
            )
            if name in MODEL_ABLATIONS:
                MODEL_ABLATIONS[name](model, hidden)
            optimizer = keras.optimizers.Adagrad(0.15, initial_accumulator_value=0.1)
            model(batch, coverage_on=True)
            optimizer.build(model.trainable_variables)
            gumbel[name] = layer.gumbel_active(0, 1)  # True for sampling="gumbel" only
            for coverage in COVERAGE_SETTINGS[config.coverage_settings]:
                step = training_lib.make_train_step(
                    model,
                    optimizer,
                    summarizer.max_grad_norm,
                    summarizer.jit_compile,
                    coverage_on=coverage,
                )
                if report.has_gpu():
                    tf.config.experimental.reset_memory_stats("GPU:0")
                float(step(batch, gumbel[name], tf.constant(0, tf.int64))["total_loss"])
                if report.has_gpu():
                    memory[name, precision, coverage] = (
                        tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20
                    )
                steps[name, precision, coverage] = step
    wall, cpu = report.time_interleaved(
        {
            key: lambda step=step, key=key: float(
                step(batch, gumbel[key[0]], tf.constant(1, tf.int64))["total_loss"]
            )
            for key, step in steps.items()
        },
        config.repeats,
    )
    if config.profile_steps:
        _emit_profile(config, steps, batch, gumbel, precisions)
    peaks = {
        precision: matmul_peak(
            4096 if report.has_gpu() else 2048,
            dtype=keras.mixed_precision.Policy(builders.precision_policy(precision)).compute_dtype,
        )
        for precision in precisions
    }
    flops = step_flops(vocab, emb, hidden, batch_size, n, t)
    rows = []
    for (name, precision, coverage), values in wall.items():
        median = float(np.median(values))
        baseline = ("sa", precision, coverage)
        rows.append(
            [config.size, name]
            + ([report.precision_name(precision)] if len(precisions) > 1 else [])
            + [
                "yes" if coverage else "no",
                "%.1f" % (1e3 * median),
                report.ratio_cell(values, wall[baseline]),
                report.ratio_cell(cpu[name, precision, coverage], cpu[baseline]),
            ]
            + (
                [
                    report.ratio_cell(
                        cpu[name, precision, coverage], cpu[name, precisions[0], coverage]
                    )
                ]
                if len(precisions) > 1
                else []
            )
            + [
                "%.1f" % (flops / median / 1e9),
                "%.1f%%" % (100 * flops / median / peaks[precision]),
            ]
            + (["%.0f" % memory[name, precision, coverage]] if memory else [])
        )
    header = (
        ["size", "context"]
        + (["precision"] if len(precisions) > 1 else [])
        + [
            "coverage",
            "median ms / step",
            "ratio to sa (range)",
            "CPU-time ratio to sa (range)",
        ]
        + (
            ["CPU-time ratio to %s (range)" % report.precision_name(precisions[0])]
            if len(precisions) > 1
            else []
        )
        + ["GFLOP/s", "of matmul peak"]
        + (["peak GPU MiB"] if memory else [])
    )
    vocab_, emb_, hidden_, b_, n_, t_ = SIZES[config.size]
    notes = [
        "Batch %d, %d/%d tokens, vocab %d, emb %d, hidden %d%s; %d interleaved steps "
        "per variant; analytic %.1f GFLOP per step; measured matmul peak %s GFLOP/s "
        "(the fraction of it is of the row's precision); process peak RSS %d MB."
        % (
            b_,
            n_,
            t_,
            vocab_,
            emb_,
            hidden_,
            report.settings(config),
            config.repeats,
            flops / 1e9,
            ", ".join(
                "%.1f in %s" % (peak / 1e9, report.precision_name(p)) for p, peak in peaks.items()
            ),
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        )
    ]
    coverage = {"both": "", "no": ", without coverage", "yes": ", with coverage"}
    report.emit(
        "Pointer-generator training step%s%s"
        % (
            ": sa, " + ", ".join(config.variants) if config.variants else "",
            coverage[config.coverage_settings],
        ),
        header,
        rows,
        notes,
        # the default variants and coverage settings keep one file, each other choice
        # (an ablation) its own
        config=(
            config.size,
            *config.variants,
            "" if config.coverage_settings == "both" else "coverage " + config.coverage_settings,
            "precisions " + " ".join(precisions) if config.precisions else "",
            report.settings(config),
        ),
    )


def _emit_profile(config, steps, batch, gumbel, precisions):
    """Profiles every timed step and keeps the op-time table next to the timing."""
    profiles = {}
    for (name, precision, coverage), step in steps.items():
        label = "%s%s%s" % (
            name,
            ", " + report.precision_name(precision) if len(precisions) > 1 else "",
            ", coverage" if coverage else "",
        )
        profiles[label] = _profile.op_times(
            lambda step=step, name=name: float(
                step(batch, gumbel[name], tf.constant(1, tf.int64))["total_loss"]
            ),
            config.profile_steps,
        )
    header, rows = _profile.table(profiles)
    report.emit(
        "Pointer-generator training step: where the op time goes",
        header,
        rows,
        [
            "Size %s; op times summed over all threads, per step, over %d profiled steps "
            "per variant (TensorFlow's profiler); parts by the first of %s in the op's "
            "name." % (config.size, config.profile_steps, ", ".join(_profile.PARTS))
        ],
        config=(
            config.size,
            "profile",
            *config.variants,
            "" if config.coverage_settings == "both" else "coverage " + config.coverage_settings,
            "precisions " + " ".join(precisions) if config.precisions else "",
            report.settings(config),
        ),
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

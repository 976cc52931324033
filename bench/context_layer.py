"""Cost of the context mechanism alone: SA against the ACVI variants, interleaved.

Times one training pass (forward + backward) of the attention block a decoder runs at
every step: additive scorer with coverage, then the context layer, over ``dec_steps``
steps, at the pointer-generator's paper size (batch 16, 400 source positions, encoder
states of 512, attention size 512) and at a small size. Variants run interleaved
(A B C ... A B C ...) in one process; the table gives median ms per pass and the median
(and range) of the per-round ratios to SA, kept in bench/results/ for BENCHMARKS.md. The whole
training step (with the LSTM and the 50k vocabulary projection, which dominate) is
measured by the model benchmarks; this isolates what ACVI adds.

``--jit_compile`` compiles each pass with XLA; ``--mixed_precision`` runs the scorer in
float16 (the context layer keeps its float32 math).

Usage: python bench/context_layer.py [--repeats=7] [--dec_steps=20] [--sizes=paper,small]
  [--jit_compile] [--mixed_precision]
"""

import os
import resource
import statistics
import sys
import time

import tensorflow as tf
from absl import flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from acvi_tf import builders
from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf.contexts import attention, registry

import _report as report

# (batch, source positions, encoder state size, attention size)
SIZES = {"paper": (16, 400, 512, 512), "small": (8, 50, 64, 64)}
# Every variant draws c_t inside the loop and computes the KL of all steps after it (the
# recommended use), except "KL in loop", which shows what the per-step KL would cost.
VARIANTS = {
    "sa": dict(mode="sa"),
    "acvi collapsed mc": dict(mode="acvi", seed=1, noise="collapsed", kl="mc"),
    "acvi collapsed mc, KL in loop": dict(
        mode="acvi", seed=1, noise="collapsed", kl="mc", kl_in_loop=True
    ),
    "acvi collapsed bound": dict(mode="acvi", seed=1, noise="collapsed", kl="bound"),
    "acvi per_component mc": dict(mode="acvi", seed=1, noise="per_component", kl="mc"),
    "acvi gumbel collapsed mc": dict(
        mode="acvi", seed=1, noise="collapsed", kl="mc", sampling="gumbel"
    ),
}


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this benchmark's flags and the shared ones (precision, XLA, seed) on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_integer(
        "repeats", 7, "Timed passes per variant (after one warm-up).", flag_values=fv
    )
    flags.DEFINE_integer("dec_steps", 20, "Decoder steps per pass.", flag_values=fv)
    flags.DEFINE_list("sizes", ["paper", "small"], "Sizes to run: paper, small.", flag_values=fv)
    acvi_flags.define_flags(fv)


def _make_pass(size, options, steps, jit_compile):
    """A compiled forward+backward pass of the attention block over ``steps`` decoder steps."""
    batch, positions, dim, units = size
    options = dict(options)
    kl_in_loop = options.pop("kl_in_loop", False)
    layer = registry.make_context_layer(options.pop("mode"), **options)
    scorer = attention.AdditiveScorer(units, use_coverage=True)
    memory = tf.random.stateless_normal([batch, positions, dim], [1, 2])
    mask = tf.sequence_mask(
        tf.random.stateless_uniform([batch], [3, 4], positions // 2, positions + 1, tf.int32),
        positions,
    )
    queries = tf.random.stateless_normal([steps, batch, dim], [5, 6])

    @tf.function(jit_compile=jit_compile or None)
    def train_pass():
        with tf.GradientTape() as tape:
            tape.watch(memory)
            keys = scorer.prepare(memory)
            prepared = layer.prepare(memory, mask)
            coverage = tf.zeros([batch, positions])
            loss = 0.0
            all_probs = tf.TensorArray(tf.float32, size=steps)
            all_contexts = tf.TensorArray(tf.float32, size=steps)
            for t in tf.range(steps):
                probs = scorer(queries[t], keys, mask, coverage=coverage)
                if kl_in_loop:
                    ctx, kl = layer(probs, prepared, training=True)
                    loss += tf.reduce_mean(kl)
                else:
                    ctx = layer.draw(probs, prepared, training=True)
                all_probs = all_probs.write(t, probs)
                all_contexts = all_contexts.write(t, ctx)
                coverage += probs
                loss += tf.reduce_mean(tf.square(ctx))
            if not kl_in_loop:
                kl = layer.kl_divergence(
                    tf.transpose(all_contexts.stack(), [1, 0, 2]),
                    tf.transpose(all_probs.stack(), [1, 0, 2]),
                    prepared,
                )
                loss += tf.reduce_mean(kl)
        variables = scorer.trainable_weights + layer.trainable_weights
        grads = tape.gradient(loss, [memory] + variables)
        return loss, tf.add_n([tf.reduce_sum(g) for g in grads])

    return train_pass


def run(config: config_lib.Config) -> None:
    """Times every variant's pass at every size and writes the results table.

    Args:
      config: the parsed flags (``define_flags``).
    """
    builders.configure_runtime(config)
    rows = []
    for size_name in config.sizes:
        size = SIZES[size_name]
        passes = {
            name: _make_pass(size, options, config.dec_steps, config.jit_compile)
            for name, options in VARIANTS.items()
        }
        for fn in passes.values():  # trace and warm up
            fn()
        times = {name: [] for name in passes}
        for _ in range(config.repeats):
            for name, fn in passes.items():
                start = time.perf_counter()
                fn()[1].numpy()
                times[name].append(1e3 * (time.perf_counter() - start))
        for name, values in times.items():
            rows.append(
                [
                    size_name,
                    "x".join(map(str, size)),
                    name,
                    "%.1f" % statistics.median(values),
                    report.ratio_cell(values, times["sa"]),
                ]
            )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    header = [
        "size",
        "B x N x D x A",
        "variant",
        "median ms / pass (%d steps, fwd+bwd)" % config.dec_steps,
        "ratio to sa (range)",
    ]
    report.emit(
        "Context layer cost",
        header,
        rows,
        notes=[
            "%d interleaved repeats per variant; process peak RSS %.0f MB%s."
            % (config.repeats, peak_mb, report.settings(config))
        ],
        config=(*config.sizes, report.settings(config)),
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

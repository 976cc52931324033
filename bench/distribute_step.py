"""The cost of ``tf.distribute``: one NMT training step on one device and under a
MirroredStrategy, interleaved in one process.

On a CPU the replicas are logical devices that share the same cores (``--cpu_devices``,
2 by default), so the ratio is the strategy's overhead: splitting the batch, the
per-replica graph and summing the gradients, with no extra compute to gain. On a machine
with several GPUs the mirrored row uses all of them, and the ratio is the scaling.

The step is the NMT model's real training step (``training_lib.make_train_step``) with ACVI's
default objective: 256 units, a bidirectional encoder, Luong attention, SGD; batch 128,
30 source and 30 target tokens, vocabularies of 8,000 words. The table gives the median
wall and CPU milliseconds per step and the per-round ratios to one device (median and
range).

Usage: python bench/distribute_step.py [--repeats=10] [--cpu_devices=2]
"""

import os
import sys
import time

import numpy as np
import tensorflow as tf
from absl import flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from acvi_tf import config as config_lib
from acvi_tf.compat import keras
from acvi_tf.contexts import registry
from acvi_tf.training import distribute
from acvi_tf.training import step as training_lib
from nmt import model as nmt_model

import _report as report

VOCAB, UNITS, BATCH, LENGTH = 8000, 256, 128, 30


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this benchmark's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_integer(
        "repeats", 10, "Timed rounds (one step of each strategy per round).", flag_values=fv
    )
    flags.DEFINE_integer(
        "cpu_devices",
        2,
        "Logical CPU devices of the mirrored row when there is no GPU.",
        lower_bound=2,
        flag_values=fv,
    )


def _batch():
    rng = np.random.default_rng(0)
    ids = lambda: rng.integers(3, VOCAB, size=(BATCH, LENGTH)).astype(np.int32)  # noqa: E731
    lengths = np.full([BATCH], LENGTH, np.int32)
    return dict(src=ids(), src_len=lengths, tgt_in=ids(), tgt_out=ids(), tgt_len=lengths)


def _step(strategy, batch):
    """NMT's training step built under ``strategy``, traced once."""
    with strategy.scope():
        keras.utils.set_random_seed(1)
        model = nmt_model.NMTModel(
            VOCAB,
            VOCAB,
            UNITS,
            encoder_type="bi",
            dropout=0.0,
            context_layer=registry.make_context_layer("acvi", seed=1),
        )
        model(batch)
        optimizer = keras.optimizers.SGD(1.0)
        optimizer.build(model.trainable_variables)
        step = training_lib.make_train_step(model, optimizer, 5.0)  # run_nmt's default clipping
    args = (tf.constant(False), tf.constant(0, tf.int64))
    float(step(batch, *args)["train_loss"])
    return lambda: float(step(batch, *args)["train_loss"])


def run(config: config_lib.Config) -> None:
    """Times one NMT training step under each strategy, interleaved, and writes the results
    table.

    Args:
      config: the parsed flags (``define_flags``).
    """
    tf.get_logger().setLevel("ERROR")
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        tf.config.set_logical_device_configuration(
            tf.config.list_physical_devices("CPU")[0],
            [tf.config.LogicalDeviceConfiguration()] * config.cpu_devices,
        )
    mirrored = distribute.make_strategy("mirrored", None if gpus else 0)
    batch = {k: tf.constant(v) for k, v in _batch().items()}
    steps = {
        "one device": _step(tf.distribute.get_strategy(), batch),
        "mirrored, %d replicas" % mirrored.num_replicas_in_sync: _step(mirrored, batch),
    }
    wall = {name: [] for name in steps}
    cpu = {name: [] for name in steps}
    for _ in range(config.repeats):
        for name, run in steps.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            run()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    base = "one device"
    rows = [
        [
            name,
            "%.1f" % (1e3 * np.median(wall[name])),
            "%.1f" % (1e3 * np.median(cpu[name])),
            report.ratio_cell(wall[name], wall[base]),
            report.ratio_cell(cpu[name], cpu[base]),
        ]
        for name in steps
    ]
    devices = "%d GPU(s)" % len(gpus) if gpus else "%d logical CPU devices" % config.cpu_devices
    report.emit(
        "tf.distribute: one NMT training step on one device and mirrored",
        ["strategy", "median ms / step", "median CPU ms / step", "wall ratio", "CPU ratio"],
        rows,
        notes=[
            "%d units, bi encoder, ACVI; batch %d, %d/%d tokens, vocab %d; mirrored over %s; "
            "%d interleaved rounds."
            % (UNITS, BATCH, LENGTH, LENGTH, VOCAB, devices, config.repeats)
        ],
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

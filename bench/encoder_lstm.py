"""The encoders' bidirectional LSTM alone: Keras's ``LSTM`` layer against ``ProjectedLSTM``.

Times one forward and backward pass (gradients for the inputs and every weight) of a
bidirectional LSTM over a padded batch at each host's paper size, built two ways with the
same weights: ``keras.layers.LSTM`` (on CPU its loop computes ``x_t W`` and every
gradient product inside; on a GPU it runs cuDNN's kernel) and
``acvi_tf.layers.recurrent.ProjectedLSTM`` (``X W`` before the loop, the recurrent kernel's
gradient after it, ``dz U^T`` with ``U^T`` formed once). The two
are timed interleaved after the trace and one untimed round; their outputs and gradients
are checked to agree first. Rows go to BENCHMARKS.md.

Usage: python bench/encoder_lstm.py [--repeats=7] [--hosts=summarizer,translator,captioner]
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
from acvi_tf.layers import recurrent

import _report as report

# batch, source steps, input size, units per direction (each host's paper size)
HOSTS = {
    "summarizer": (16, 400, 128, 256),
    "translator": (128, 50, 256, 256),
    "captioner": (64, 24, 1024, 1000),
}


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this benchmark's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_integer("repeats", 7, "Timed passes per form.", lower_bound=1, flag_values=fv)
    flags.DEFINE_list("hosts", list(HOSTS), "Sizes to time.", flag_values=fv)
    flags.register_validator(
        "hosts",
        lambda names: set(names) <= set(HOSTS),
        message="--hosts: choose from %s" % ", ".join(HOSTS),
        flag_values=fv,
    )


def _pass(layer, x, mask):
    """One forward and backward pass; the outputs and the gradients."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        outputs = layer(x, mask=mask)
        loss = sum(tf.reduce_sum(tf.sin(out)) for out in outputs)
    return outputs, tape.gradient(loss, [x] + layer.trainable_weights)


def _time_host(batch, steps, inputs, units, repeats):
    """Median seconds per pass of each form, and the per-round times."""
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(batch, steps, inputs)), tf.float32)
    mask = tf.sequence_mask(rng.integers(steps * 3 // 4, steps + 1, size=batch), steps)
    forms = {
        "keras LSTM": keras.layers.Bidirectional(
            keras.layers.LSTM(units, return_sequences=True, return_state=True)
        ),
        "ProjectedLSTM": keras.layers.Bidirectional(
            recurrent.ProjectedLSTM(
                keras.layers.LSTMCell(units), return_sequences=True, return_state=True
            )
        ),
    }
    passes, results = {}, {}
    for name, layer in forms.items():
        layer(x, mask=mask)
        if name != "keras LSTM":
            layer.set_weights(forms["keras LSTM"].get_weights())
        passes[name] = tf.function(lambda layer=layer: _pass(layer, x, mask))
        results[name] = passes[name]()
    for got, want in zip(
        tf.nest.flatten(results["ProjectedLSTM"]), tf.nest.flatten(results["keras LSTM"])
    ):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    times = {name: [] for name in forms}
    for repeat in range(repeats + 1):
        for name, call in passes.items():
            start = time.perf_counter()
            tf.nest.map_structure(lambda t: t.numpy(), call())
            if repeat:
                times[name].append(time.perf_counter() - start)
    return times


def run(config: config_lib.Config) -> None:
    """Times both LSTM forms at every host size and writes the results table.

    Args:
      config: the parsed flags (``define_flags``).
    """
    rows = []
    for host in config.hosts:
        batch, steps, inputs, units = HOSTS[host]
        times = _time_host(batch, steps, inputs, units, config.repeats)
        for name, values in times.items():
            rows.append(
                [
                    host,
                    "%dx%dx%d, %d units" % (batch, steps, inputs, units),
                    name,
                    "%.1f" % (1e3 * np.median(values)),
                    report.ratio_cell(values, times["keras LSTM"]),
                ]
            )
    notes = [
        "Bidirectional, lengths drawn from 3/4 to all of the source steps; one forward "
        "and backward pass (gradients for the inputs and all weights); %d interleaved "
        "passes per form." % config.repeats
    ]
    report.emit(
        "Encoder LSTM forward and backward",
        [
            "host",
            "batch x steps x inputs",
            "form",
            "median ms / pass",
            "ratio to keras LSTM (range)",
        ],
        rows,
        notes,
        config=config.hosts,
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

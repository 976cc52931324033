"""ACVI's KL terms at one setting of sigma, under each sampler: what each one estimates.

For each ``--log_vars`` value every ``log sigma^2`` of the layer is set to it (the variance
network's last layer pinned), and the mean per decoder step is taken over
``batch x --steps`` draws of:

* ``mc`` (``log q(c) - log p(c)`` at the sample) under eq. 25's sample, under a
  Gumbel-softmax sample at ``--gumbel_temperature`` and under a sample from the mixture
  q itself (``--acvi_sampling=mixture``), whose mean is ``KL[q || p]``; the last with
  its standard error;
* ``bound`` (``sum_i a_i KL[N(h_i, sigma_i^2) || N(0, I)]``, an upper bound of
  ``KL[q || p]``) and ``exact`` (the KL of eq. 25's Gaussian).

Encoder states are N(0, 0.5^2) and the attention a softmax of N(0, 1) scores; ``paper``
is the pointer-generator's size (batch 16, 400 positions, states of 512), ``small`` 8 x
50 x 64. The table is kept in ``bench/results/`` and quoted by docs/acvi.md.

Usage: python bench/acvi_kl_terms.py [--size=paper|small] [--steps=100]
  [--log_vars=4,0,-4,-10] [--gumbel_temperature=0.5] [--seed=1]
"""

import math
import os
import sys
from typing import Dict, List, Sequence

import numpy as np
import tensorflow as tf
from absl import flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from acvi_tf import config as config_lib
from acvi_tf.contexts import acvi as acvi_lib

import _report as report

# (batch, source positions, encoder state size)
SIZES = {"paper": (16, 400, 512), "small": (8, 50, 64)}
# column -> (sampling, KL term)
COLUMNS = {
    "mc, eq. 25": ("approx", "mc"),
    "mc, Gumbel-softmax": ("gumbel", "mc"),
    "mc, mixture (KL[q || p])": ("mixture", "mc"),
    "bound": ("approx", "bound"),
    "exact": ("approx", "exact"),
}


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this benchmark's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_enum("size", "paper", list(SIZES), "Batch, positions, state size.", flag_values=fv)
    flags.DEFINE_integer("steps", 100, "Decoder steps (draws) per example.", flag_values=fv)
    flags.DEFINE_list("log_vars", ["4", "0", "-4", "-10"], "log sigma^2 values.", flag_values=fv)
    flags.DEFINE_float("gumbel_temperature", 0.5, "Gumbel-softmax temperature.", flag_values=fv)
    flags.DEFINE_integer("seed", 1, "Seed of the states, scores and draws.", flag_values=fv)


def _pinned_layer(
    sampling: str, kl: str, log_var: float, dim: int, **options
) -> acvi_lib.ACVIContext:
    """An ACVI layer whose ``log sigma^2`` is ``log_var`` everywhere (last layer: W2 = 0,
    b2 = ``log_var``)."""
    layer = acvi_lib.ACVIContext(sampling=sampling, kl=kl, **options)
    layer.variance_network.build(tf.TensorShape([None, None, dim]))
    layer.variance_network.W2.assign(tf.zeros_like(layer.variance_network.W2))
    layer.variance_network.b2.assign(tf.fill([dim], log_var))
    return layer


def kl_terms(
    size: Sequence[int], steps: int, log_var: float, temperature: float, seed: int
) -> Dict[str, List[float]]:
    """Per-step values of every column at one ``log sigma^2``: column -> [mean, std error].

    Args:
      size: (batch, positions, state size).
      steps: decoder steps per example.
      log_var: the ``log sigma^2`` of every position and dimension.
      temperature: the Gumbel-softmax temperature.
      seed: seed of the states, the attention scores and the draws.
    """
    batch, positions, dim = size
    rng = np.random.default_rng(seed)
    memory = tf.constant(rng.normal(0.0, 0.5, (batch, positions, dim)), tf.float32)
    probs = tf.nn.softmax(tf.constant(rng.normal(size=(batch, steps, positions)), tf.float32))
    values = {}
    for column, (sampling, kl) in COLUMNS.items():
        layer = _pinned_layer(sampling, kl, log_var, dim, gumbel_temperature=temperature, seed=seed)
        prepared = layer.prepare(memory)
        per_step = layer(probs, prepared, training=True)[1].numpy().ravel().astype(np.float64)
        values[column] = [per_step.mean(), per_step.std(ddof=1) / math.sqrt(per_step.size)]
    return values


def _cell(mean: float, error: float, with_error: bool) -> str:
    text = "{:,.0f}".format(mean) if abs(mean) >= 100 else "%.2f" % mean
    if with_error:
        text += " ± " + ("{:,.0f}".format(error) if error >= 100 else "%.2f" % error)
    return text


def run(config: config_lib.Config) -> None:
    """Measures every column at every ``--log_vars`` value and keeps the table."""
    size = SIZES[config.size]
    rows, data = [], {}
    for text in config.log_vars:
        log_var = float(text)
        values = kl_terms(size, config.steps, log_var, config.gumbel_temperature, config.seed)
        data[text] = values
        rows.append(
            [text] + [_cell(*values[c], with_error=c.startswith("mc, mixture")) for c in COLUMNS]
        )
    report.emit(
        "ACVI's KL terms per decoder step under each sampler (%s size)" % config.size,
        ["log sigma^2"] + list(COLUMNS),
        rows,
        notes=[
            "Batch, positions, state size %s; %d steps per example; encoder states "
            "N(0, 0.5^2), attention softmax(N(0, 1)); Gumbel-softmax temperature %g; "
            "seed %d. Mean per step (mixture: ± standard error)."
            % ("x".join(map(str, size)), config.steps, config.gumbel_temperature, config.seed)
        ],
        config=[config.size],
        data=data,
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)

"""Paired bootstrap resampling of two systems on one test set (Koehn, 2004).

Both systems are scored on the same examples; each has one row of statistics per
example. ``paired_bootstrap`` draws ``samples`` resamples of the example indices (with
replacement, the same indices for both systems), recomputes each system's headline
metric on every resample with the metric's own aggregation, and reports:

* the observed difference ``b - a`` on the whole test set;
* a 95% interval of the difference: the 2.5th and 97.5th percentiles of the resampled
  differences (NumPy's ``quantile``, linear interpolation);
* the p-value: the share of resamples whose difference does not have the observed
  difference's sign (``<= 0`` when B is better, ``>= 0`` when A is), Koehn's "B is
  better in 1 - p of the samples". When the observed difference is 0 there is no sign
  to hold and the p-value is 1.

The aggregation decides how a resample is scored: ``mean`` for metrics that are the mean
of per-example scores (ROUGE-1.5.5's corpus score, CIDEr-D with the test set's document
frequencies), ``acvi_tf.metrics.bleu.bleu_of_sums`` for corpus BLEU (the sums of the
per-sentence n-gram statistics, then BLEU).
"""

from typing import Callable, NamedTuple

import numpy as np

SAMPLES = 1000
SEED = 0
# The rows of one resample are drawn this many resamples at a time (bounds the memory).
_CHUNK = 50


class BootstrapResult(NamedTuple):
    """What ``paired_bootstrap`` returns.

    Attributes:
      a: system A's metric on the whole test set.
      b: system B's metric on the whole test set.
      difference: ``b - a``.
      low: the 2.5th percentile of the resampled differences.
      high: the 97.5th percentile.
      p_value: the share of resamples whose difference does not keep the sign of
        ``difference``; 1 when ``difference`` is 0.
      samples: the number of resamples.
      seed: the seed of the resampling.
    """

    a: float
    b: float
    difference: float
    low: float
    high: float
    p_value: float
    samples: int
    seed: int


def mean(rows: np.ndarray) -> float:
    """The mean of per-example scores (``rows``: ``[N]``)."""
    return float(np.mean(rows))


def paired_bootstrap(
    stats_a: np.ndarray,
    stats_b: np.ndarray,
    aggregate: Callable[[np.ndarray], float] = mean,
    samples: int = SAMPLES,
    seed: int = SEED,
) -> BootstrapResult:
    """Paired bootstrap test of the difference in a metric between two systems.

    Args:
      stats_a: system A's statistics, one row per example (``[N]`` or ``[N, K]``).
      stats_b: system B's, the same shape, row i of the same example.
      aggregate: the metric of a set of rows (a resample's rows, in draw order).
      samples: the number of resamples.
      seed: the seed of ``np.random.default_rng``; the resamples are its first
        ``samples * N`` draws of ``integers(0, N)``, in resample order.

    Returns:
      A ``BootstrapResult``.

    Raises:
      ValueError: the shapes differ, there is no example or ``samples`` is below 1.
    """
    stats_a, stats_b = np.asarray(stats_a), np.asarray(stats_b)
    if stats_a.shape != stats_b.shape:
        raise ValueError(
            "the statistics differ in shape: %s and %s" % (stats_a.shape, stats_b.shape)
        )
    if not len(stats_a) or samples < 1:
        raise ValueError("need at least one example and one resample")
    a, b = aggregate(stats_a), aggregate(stats_b)
    differences = _resampled_differences(stats_a, stats_b, aggregate, samples, seed)
    low, high = np.quantile(differences, [0.025, 0.975])
    return BootstrapResult(
        a=a,
        b=b,
        difference=b - a,
        low=float(low),
        high=float(high),
        p_value=p_value(b - a, differences),
        samples=samples,
        seed=seed,
    )


def _resampled_differences(stats_a, stats_b, aggregate, samples, seed):
    """``aggregate(b[idx]) - aggregate(a[idx])`` for each of ``samples`` resamples."""
    rng = np.random.default_rng(seed)
    count = len(stats_a)
    differences = []
    for start in range(0, samples, _CHUNK):
        for idx in rng.integers(0, count, size=(min(_CHUNK, samples - start), count)):
            differences.append(aggregate(stats_b[idx]) - aggregate(stats_a[idx]))
    return np.asarray(differences)


def p_value(observed: float, differences: np.ndarray) -> float:
    """The share of ``differences`` that do not keep the sign of ``observed``.

    Args:
      observed: the difference on the whole test set.
      differences: the resampled differences.

    Returns:
      ``mean(differences <= 0)`` when ``observed > 0``, ``mean(differences >= 0)`` when
      it is below 0, and 1 when it is 0.
    """
    if observed > 0:
        return float(np.mean(differences <= 0))
    if observed < 0:
        return float(np.mean(differences >= 0))
    return 1.0

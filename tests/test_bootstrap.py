"""The paired bootstrap against a NumPy reference, and on cases whose answer is known."""

import numpy as np
import pytest

from acvi_tf.metrics import bleu, bootstrap

RNG = np.random.default_rng(7)
SCORES_A = RNG.uniform(0.2, 0.6, size=40)
SCORES_B = SCORES_A + RNG.normal(0.02, 0.1, size=40)


def reference_differences(stats_a, stats_b, aggregate_rows, samples, seed):
    """B - A of every resample: all indices drawn at once, each resample's metric from
    its rows ``[samples, N, ...]`` in one vectorised call."""
    idx = np.random.default_rng(seed).integers(0, len(stats_a), size=(samples, len(stats_a)))
    return aggregate_rows(stats_b[idx]) - aggregate_rows(stats_a[idx])


def reference_p_value(observed, differences):
    if observed == 0:
        return 1.0
    return float(np.mean(np.sign(differences) != np.sign(observed)))


def test_mean_metric_matches_numpy():
    result = bootstrap.paired_bootstrap(SCORES_A, SCORES_B, samples=300, seed=3)
    differences = reference_differences(SCORES_A, SCORES_B, lambda rows: rows.mean(axis=1), 300, 3)
    observed = SCORES_B.mean() - SCORES_A.mean()
    assert result.a == pytest.approx(SCORES_A.mean()) and result.b == pytest.approx(SCORES_B.mean())
    assert result.difference == pytest.approx(observed)
    assert result.low == pytest.approx(np.percentile(differences, 2.5))
    assert result.high == pytest.approx(np.percentile(differences, 97.5))
    assert result.p_value == reference_p_value(observed, differences)
    assert 0 < result.p_value < 0.5 and result.low < observed < result.high
    assert (result.samples, result.seed) == (300, 3)


def numpy_bleu(sums):
    """Corpus BLEU-4 of summed statistics ``[..., 10]`` (sacrebleu's column order),
    unsmoothed, x100."""
    sys_len, ref_len = sums[..., 0], sums[..., 1]
    correct, total = sums[..., 2:6], sums[..., 6:10]
    with np.errstate(divide="ignore"):
        log_precision = np.log(correct / total).mean(axis=-1)
    penalty = np.where(sys_len < ref_len, np.exp(1 - ref_len / sys_len), 1.0)
    return 100 * penalty * np.exp(log_precision)


def test_bleu_is_recomputed_from_the_resampled_sentence_statistics():
    references = ["the cat sat on the mat today", "there is a dog in the big garden"] * 6
    references += ["he reads the news every morning"] * 3
    a = ["the cat sat on a mat today", "a dog is in the big garden"] * 6
    a += ["he reads the news each morning"] * 3
    b = ["the cat sat on the mat today", "there is a dog in a garden"] * 6
    b += ["he reads news every morning"] * 3
    stats_a = bleu.sentence_statistics(references, a)
    stats_b = bleu.sentence_statistics(references, b)
    result = bootstrap.paired_bootstrap(stats_a, stats_b, bleu.bleu_of_statistics, 200, 5)
    differences = reference_differences(
        stats_a, stats_b, lambda rows: numpy_bleu(rows.sum(axis=1)), 200, 5
    )
    assert result.a == pytest.approx(bleu.corpus_bleu(references, a))
    assert result.b == pytest.approx(numpy_bleu(stats_b.sum(axis=0)))
    assert result.low == pytest.approx(np.percentile(differences, 2.5))
    assert result.high == pytest.approx(np.percentile(differences, 97.5))
    assert result.p_value == reference_p_value(result.difference, differences)


def test_identical_systems_differ_by_zero_with_p_value_1():
    result = bootstrap.paired_bootstrap(SCORES_A, SCORES_A.copy(), samples=100)
    assert (result.difference, result.low, result.high, result.p_value) == (0, 0, 0, 1.0)


@pytest.mark.parametrize("sign", [1, -1])
def test_a_system_better_on_every_example_has_p_value_0(sign):
    result = bootstrap.paired_bootstrap(SCORES_A, SCORES_A + sign * 0.01, samples=100)
    assert result.p_value == 0.0
    assert sign * result.low > 0 and sign * result.high > 0
    assert result.difference == pytest.approx(sign * 0.01)


def test_p_value_counts_ties_against_the_observed_sign():
    assert bootstrap.p_value(0.5, np.array([1.0, 0.0, -1.0, 2.0])) == 0.5
    assert bootstrap.p_value(-0.5, np.array([1.0, 0.0, -1.0, -2.0])) == 0.5


def test_statistics_of_different_shapes_are_refused():
    with pytest.raises(ValueError, match="differ in shape"):
        bootstrap.paired_bootstrap(SCORES_A, SCORES_A[:-1])

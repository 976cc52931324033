"""bench/acvi_kl_terms.py: the claims docs/acvi.md reads off its table hold at a small
size, and the table the page quotes is the kept result's."""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import acvi_kl_terms  # noqa: E402

import _report  # noqa: E402 (bench/ is not a package)


def test_only_the_mixture_sampler_makes_mc_a_kl_below_the_bound():
    size = (4, 20, 16)
    clip = acvi_kl_terms.kl_terms(size, steps=50, log_var=-10.0, temperature=0.5, seed=1)
    mixture, error = clip["mc, mixture (KL[q || p])"]
    # the mixture's KL: positive, and at most the bound (convexity), within the noise
    assert 0 < mixture <= clip["bound"][0] + 4 * error
    # under eq. 25 and the relaxed sample, mc runs far below zero at the clip
    assert clip["mc, eq. 25"][0] < -10 * mixture
    assert clip["mc, Gumbel-softmax"][0] < -10 * mixture
    assert clip["exact"][0] > 0
    moderate = acvi_kl_terms.kl_terms(size, steps=50, log_var=0.0, temperature=0.5, seed=1)
    mixture, error = moderate["mc, mixture (KL[q || p])"]
    assert 0 < mixture <= moderate["bound"][0] + 4 * error


def test_the_page_quotes_the_kept_paper_size_table():
    with open(os.path.join(_report.RESULTS, "acvi_kl_terms-paper-cpu.json"), encoding="utf-8") as f:
        result = json.load(f)
    table = _report.markdown_table(result["header"], result["rows"])
    with open(os.path.join(ROOT, "docs", "acvi.md"), encoding="utf-8") as f:
        assert table in f.read()

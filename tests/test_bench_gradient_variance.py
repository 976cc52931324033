"""bench/acvi_gradient_variance.py: its measure of noise, and the table docs/acvi.md
quotes is the kept result's."""

import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import acvi_gradient_variance  # noqa: E402

import _report  # noqa: E402 (bench/ is not a package)


def test_the_relative_variance_is_the_noise_of_one_draw_over_the_signal():
    rng = np.random.default_rng(0)
    signal = np.array([3.0, -4.0])  # |mean|^2 = 25
    rows = signal + rng.normal(scale=[1.0, 2.0], size=(20000, 2))  # variance 1 + 4
    assert abs(acvi_gradient_variance.relative_variance(rows) - 5.0 / 25.0) < 0.01


@pytest.mark.parametrize("task", ["translation", "captioning", "summarization"])
def test_the_page_quotes_each_kept_table(task):
    path = os.path.join(_report.RESULTS, "acvi_gradient_variance-%s-cpu.json" % task)
    with open(path, encoding="utf-8") as f:
        result = json.load(f)
    table = _report.markdown_table(result["header"], result["rows"])
    block = "<!-- gradient-variance: %s -->\n%s\n<!-- /gradient-variance -->" % (task, table)
    with open(os.path.join(ROOT, "docs", "acvi.md"), encoding="utf-8") as f:
        assert block in f.read()

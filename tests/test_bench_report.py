"""bench/_report.py: each benchmark configuration keeps one results file, a new run
replaces it, and BENCHMARKS.md is generated from the files (never appended to); the docs
quote the files' cells as they are."""

import json
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import _report  # noqa: E402 (bench/ is not a package)


@pytest.fixture
def report(tmp_path, monkeypatch):
    monkeypatch.setattr(_report, "RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(_report, "BENCHMARKS_MD", str(tmp_path / "BENCHMARKS.md"))
    monkeypatch.setattr(_report, "machine", lambda: "a CPU, 2 cores")
    monkeypatch.setattr(_report, "has_gpu", lambda: False)
    monkeypatch.setattr(_report, "git_revision", lambda: "abc1234")
    return tmp_path


def _emit(monkeypatch, script, rows, config, **kwargs):
    monkeypatch.setattr(sys, "argv", [os.path.join(ROOT, "bench", script), "--size=paper"])
    _report.emit("A step", ["variant", "ms"], rows, notes=["Batch 16."], config=config, **kwargs)


def test_a_new_run_replaces_its_configuration_and_keeps_the_others(report, monkeypatch):
    _emit(monkeypatch, "train_step.py", [["sa", 7.0]], ("paper", ""))
    _emit(monkeypatch, "train_step.py", [["sa", 6.0]], ("paper", ", XLA"))
    path = report / "results" / "train_step-paper-cpu.json"
    result = json.loads(path.read_text())
    result["reading"] = "SA takes 7 ms."
    path.write_text(json.dumps(result))
    _report.render()
    assert "Reading: SA takes 7 ms." in (report / "BENCHMARKS.md").read_text()
    _emit(monkeypatch, "train_step.py", [["sa", 5.0]], ("paper", ""))
    assert sorted(os.listdir(report / "results")) == [
        "train_step-paper-cpu.json",
        "train_step-paper-xla-cpu.json",
    ]
    text = (report / "BENCHMARKS.md").read_text()
    assert text.count("### A step") == 2 and text.count("## `bench/train_step.py`") == 1
    assert "| sa | 5.0 |" in text and "| sa | 7.0 |" not in text and "| sa | 6.0 |" in text
    assert "Reading" not in text  # the reading was about the replaced numbers
    result = json.loads(path.read_text())
    assert result["command"] == "python bench/train_step.py --size=paper"
    assert result["revision"] == "abc1234" and result["rows"] == [["sa", "5.0"]]


def test_scripts_render_in_their_order_and_data_is_kept(report, monkeypatch):
    _emit(monkeypatch, "decode_speed.py", [["beam", 1.0]], ("paper",))
    _emit(monkeypatch, "train_step.py", [["sa", 3.0]], ("paper",))
    _emit(monkeypatch, "compare_contexts.py", [["sa", 2.0]], ("translation",), data={"sa": 1})
    text = (report / "BENCHMARKS.md").read_text()
    # SCRIPTS' order, not the alphabet's
    assert text.index("compare_contexts.py") < text.index("train_step.py")
    assert text.index("train_step.py") < text.index("decode_speed.py")
    monkeypatch.setattr(sys, "argv", [os.path.join(ROOT, "bench", "compare_contexts.py")])
    assert _report.load(("translation",))["data"] == {"sa": 1}
    assert _report.load(("captioning",)) is None


BUILDERS = os.path.join(ROOT, "bench", "results", "builders-5000-pairs-bpe-8000-commands-cpu.json")


def _read(*path):
    with open(os.path.join(ROOT, *path), encoding="utf-8") as f:
        return f.read()


def test_the_docs_builders_figures_are_the_results_cells():
    """docs/performance.md's "Building corpora" and docs/data.md quote bench/builders.py's
    result: every ratio cell, every second and the whole command's figure (what a user's
    one-off build costs) beside the in-process one; a rerun fails here until they do."""
    result = json.loads(_read(BUILDERS))
    ratios = {row[0]: row[3:5] for row in result["rows"]}
    section = _read("docs", "performance.md").split("## Building corpora\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    table = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in section.splitlines()
        if line[:2] == "| "
    ]
    assert {row[0]: row[1:] for row in table[1:]} == ratios
    seconds = {s for row in result["rows"] for cell in row[1:3] for s in cell.split(" / ")}
    [first_call] = re.findall(r"took ([\d.]+) s, once", " ".join(result["notes"]))
    quoted = re.findall(r"(\d+\.\d+) s\b", section.split("| translation: reading", 1)[1])
    assert quoted and set(quoted) <= seconds | {first_call}
    data = " ".join(_read("docs", "data.md").split())
    whole = ratios["summarization, whole command"][0].split()[0]
    in_process = ratios["summarization, in one process"][0].split()[0]
    assert "5,000 pairs takes %s of Treebank's CPU time" % whole in data
    assert "in one process, without those one-off costs, takes %s " % in_process in data

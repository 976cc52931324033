"""bench/_report.py: each benchmark configuration keeps one results file, a new run
replaces it, and BENCHMARKS.md is generated from the files (never appended to)."""

import json
import os
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

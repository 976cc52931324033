"""acvi_tf.progress: the progress lines of training and of the raw-input commands."""

import pytest
from absl import logging

from acvi_tf import progress as progress_lib


def test_a_line_first_then_at_most_every_interval_and_at_the_end(monkeypatch):
    lines = []
    monkeypatch.setattr(logging, "info", lambda fmt, *args: lines.append(fmt % args))
    now = [100.0]
    progress = progress_lib.Progress(10, "translated sentences", every=5.0, clock=lambda: now[0])
    for done, t in [(2, 101.0), (4, 103.0), (6, 106.5), (8, 107.0), (10, 108.0)]:
        now[0] = t
        progress(done)
    assert lines == [
        "translated 2/10 sentences, 2.00/s",  # 1 s of work: too early for an ETA
        "translated 6/10 sentences, 0.92/s, ETA 4s",
        "translated 10/10 sentences, 1.25/s, ETA 0s",
    ]


def test_a_delayed_progress_is_silent_when_the_work_is_quick(monkeypatch):
    lines = []
    monkeypatch.setattr(logging, "info", lambda fmt, *args: lines.append(fmt % args))
    now = [0.0]
    quick = progress_lib.Progress(4, "scored segments", delay=10.0, clock=lambda: now[0])
    for done in range(1, 5):
        now[0] = done * 2.0
        quick(done)
    assert lines == []
    slow = progress_lib.Progress(4, "scored segments", delay=10.0, clock=lambda: now[0])
    for done in range(1, 5):
        now[0] += 6.0
        slow(done)
    assert lines == ["scored 2/4 segments, 0.17/s, ETA 12s", "scored 4/4 segments, 0.17/s, ETA 0s"]


def test_a_stage_logs_its_start_and_its_time(monkeypatch):
    lines = []
    monkeypatch.setattr(logging, "info", lambda fmt, *args: lines.append(fmt % args))
    times = iter([5.0, 8.25])
    with progress_lib.stage("Scoring 3 summaries with ROUGE", clock=lambda: next(times)):
        lines.append("inside")
    assert lines == [
        "Scoring 3 summaries with ROUGE",
        "inside",
        "Scoring 3 summaries with ROUGE: done in 3.2 s",
    ]


def test_progress_reports_rates_and_eta():
    clock = iter([0.0, 0.0, 5.0, 10.0])
    progress = progress_lib.Progress(100, every=10.0, clock=lambda: next(clock))
    assert progress.update(0, 50) is None  # first call starts the clock
    assert progress.update(1, 50) is None  # 5 s: too early for a line
    steps_per_sec, tokens_per_sec = progress.update(2, 50, loss=1.0)
    assert steps_per_sec == pytest.approx(0.2) and tokens_per_sec == pytest.approx(10.0)


def test_progress_lines_come_further_apart_as_training_goes_on():
    now = [0.0]
    progress = progress_lib.Progress(0, every=10.0, clock=lambda: now[0], longest=300.0)
    times = []
    for second in range(3601):
        now[0] = float(second)
        if progress.update(second, 1) is not None:
            times.append(second)
    assert times[:7] == [10, 20, 30, 40, 54, 72, 96]  # then a quarter of the time trained
    assert len([t for t in times if t <= 240]) == 10
    assert times[-1] - times[-2] == 300  # at most longest apart
    assert len(times) == 23


def test_a_short_run_logs_its_last_step(monkeypatch):
    lines = []
    monkeypatch.setattr(logging, "info", lambda fmt, *args: lines.append(fmt % args))
    now = [0.0]
    progress = progress_lib.Progress(20, every=10.0, clock=lambda: now[0])
    for step in range(21):  # 20 steps in 2 s
        now[0] = step * 0.1
        progress.update(step, 8, loss=2.5)
    assert lines == ["step 20/20: loss 2.5000, 10.00 steps/s, 80 tokens/s"]

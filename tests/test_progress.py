"""acvi_tf.progress: the progress lines of the raw-input commands."""

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
        "translated 2/10 sentences, 2.00/s, ETA 4s",
        "translated 6/10 sentences, 0.92/s, ETA 4s",
        "translated 10/10 sentences, 1.25/s, ETA 0s",
    ]

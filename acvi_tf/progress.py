"""Progress lines for the steps a person waits for: training, the commands that work
through long inputs (summaries, translations, captions of new text and videos), and
scoring and export."""

import contextlib
import time
from typing import Callable, Iterator, Optional, Tuple

from absl import logging

from acvi_tf.process import stops


class Progress:
    """Throttled progress lines with the rate and the time left, for work of a known
    size: items done out of a total (``__call__``: the commands that work through long
    inputs) or training steps (``update``: the trainer).

    Items log on the first call (after ``delay``), then at most every ``every`` seconds,
    and on the last; the time left shows once ``every`` seconds have passed. Training
    steps log at most every ``every`` seconds at first, then, with ``longest`` set, a
    quarter of the time trained so far apart, at most ``longest`` seconds (``every=10,
    longest=300``: a 4-minute run logs 10 lines, an hour 23, then one every 5 minutes),
    and at the last step.

    Args:
      total: how many items there are, or the step training ends at (0: unknown, no ETA).
      what: the past participle and the items, e.g. ``"summarised documents"``; the line
        reads ``summarised 30/120 documents, 2.50/s, ETA 36s``.
      every: the least time between two lines, in seconds.
      clock: the time source (seconds).
      delay: no item line before ``delay`` seconds have passed, and the last line only
        after an earlier one: work done within ``delay`` logs nothing.
      longest: the most time between two lines as they grow further apart (None: lines
        stay ``every`` seconds apart).
    """

    def __init__(
        self,
        total: int,
        what: str = "trained steps",
        every: float = 10.0,
        clock: Callable[[], float] = time.time,
        delay: float = 0.0,
        longest: Optional[float] = None,
    ) -> None:
        self.total = total
        self._verb, _, self._items = what.partition(" ")
        self._every = every
        self._longest = longest
        self._clock = clock
        self._start = clock()
        self._delay = delay
        self._last = None
        self._last_step = None
        self._tokens = 0

    def _due(self, now: float) -> bool:
        """Whether the wait since the last line is over."""
        wait = self._every
        if self._longest is not None:
            wait = min(max(wait, (now - self._start) / 4), self._longest)
        return now - self._last >= wait

    def __call__(self, done: int) -> None:
        """Reports that ``done`` items of the total are done; raises ``stops.Stopped`` for
        a stop whose exception was lost (``stops.check``)."""
        stops.check()
        now = self._clock()
        if self._last is None:
            if now - self._start < self._delay:
                return
        elif done < self.total and not self._due(now):
            return
        self._last = now
        rate = done / max(now - self._start, 1e-9)
        # an ETA once the rate rests on ``every`` seconds of work (the first items of a
        # build can carry its start), and at the end
        eta = ""
        if now - self._start >= self._every or done >= self.total:
            eta = ", ETA %.0fs" % ((self.total - done) / rate if rate else float("inf"))
        logging.info("%s %d/%d %s, %.2f/s%s", self._verb, done, self.total, self._items, rate, eta)

    def update(self, step: int, tokens: int, **scalars: float) -> Optional[Tuple[float, float]]:
        """Counts ``tokens`` for this training step; logs a line (step, ``scalars``,
        steps/s, tokens/s, ETA) when the wait is over, and at the last step (a short run
        has one line). The first call starts the clock.

        Args:
          step: the step just done.
          tokens: the tokens it trained on.
          **scalars: values the line shows, e.g. ``loss=2.5``.

        Returns:
          ``(steps_per_sec, tokens_per_sec)`` when a line was logged, else None.
        """
        self._tokens += tokens
        if self._last_step is None:
            self._last_step, self._last, self._tokens = step, self._clock(), 0
            self._start = self._last
            return None
        now = self._clock()
        if not self._due(now) and step != self.total:  # the last step always has its line
            return None
        elapsed = max(now - self._last, 1e-9)
        steps_per_sec = (step - self._last_step) / elapsed
        tokens_per_sec = self._tokens / elapsed
        eta = ""
        if self.total and steps_per_sec > 0 and step < self.total:
            eta = ", ETA %s" % _duration((self.total - step) / steps_per_sec)
        logging.info(
            "step %d%s: %s, %.2f steps/s, %.0f tokens/s%s",
            step,
            "/%d" % self.total if self.total else "",
            ", ".join("%s %.4f" % kv for kv in scalars.items()),
            steps_per_sec,
            tokens_per_sec,
            eta,
        )
        self._last_step, self._last, self._tokens = step, now, 0
        return steps_per_sec, tokens_per_sec


def _duration(seconds: float) -> str:
    """``seconds`` as ``1h02m03s``."""
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return "%dh%02dm%02ds" % (hours, rest // 60, rest % 60)


@contextlib.contextmanager
def stage(what: str, clock: Callable[[], float] = time.time) -> Iterator[None]:
    """Logs ``what`` as the block starts and ``<what>: done in N s`` when it ends (a
    block that raises logs no end).

    Args:
      what: what the block does, e.g. ``"Scoring 400 summaries with ROUGE-1.5.5"``.
      clock: the time source (seconds).
    """
    logging.info("%s", what)
    start = clock()
    yield
    logging.info("%s: done in %.1f s", what, clock() - start)

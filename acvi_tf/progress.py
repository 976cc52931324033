"""Progress lines for the steps a person waits for: the commands that work through long
inputs (summaries, translations, captions of new text and videos), and scoring and
export."""

import contextlib
import time
from typing import Callable, Iterator

from absl import logging


class Progress:
    """Logs ``what`` done out of ``total`` with the rate and the time left: on the first
    update, then at most every ``every`` seconds, and on the last.

    Args:
      total: how many items there are.
      what: the past participle and the items, e.g. ``"summarised documents"``; the line
        reads ``summarised 30/120 documents, 2.50/s, ETA 36s``.
      every: seconds between lines.
      clock: the time source (seconds).
      delay: no line before ``delay`` seconds have passed, and the last line only after
        an earlier one: a step done within ``delay`` logs nothing.
    """

    def __init__(
        self,
        total: int,
        what: str,
        every: float = 10.0,
        clock: Callable[[], float] = time.time,
        delay: float = 0.0,
    ):
        self.total = total
        self._verb, _, self._items = what.partition(" ")
        self._every = every
        self._clock = clock
        self._start = clock()
        self._delay = delay
        self._last = None

    def __call__(self, done: int) -> None:
        """Reports that ``done`` items of the total are done."""
        now = self._clock()
        if self._last is None:
            if now - self._start < self._delay:
                return
        elif done < self.total and now - self._last < self._every:
            return
        self._last = now
        rate = done / max(now - self._start, 1e-9)
        logging.info(
            "%s %d/%d %s, %.2f/s, ETA %.0fs",
            self._verb,
            done,
            self.total,
            self._items,
            rate,
            (self.total - done) / rate if rate else float("inf"),
        )


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

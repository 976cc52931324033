"""Progress lines for the commands that work through long inputs (summaries, translations,
captions of new text and videos)."""

import time
from typing import Callable

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
    """

    def __init__(
        self, total: int, what: str, every: float = 10.0, clock: Callable[[], float] = time.time
    ):
        self.total = total
        self._verb, _, self._items = what.partition(" ")
        self._every = every
        self._clock = clock
        self._start = clock()
        self._last = None

    def __call__(self, done: int) -> None:
        """Reports that ``done`` items of the total are done."""
        now = self._clock()
        if self._last is not None and done < self.total and now - self._last < self._every:
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

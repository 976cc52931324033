"""The summarizer's training curriculum: the ACVI paper's Table 5 and ``--phases``.

A curriculum is a list of ``Phase`` segments of the global step, each with its own
truncation lengths, optionally followed by a coverage phase. ``phase_at(step)`` tells a
resumed run where it is, so resuming never repeats or skips a phase.
"""

from typing import List, NamedTuple, Sequence

from absl import logging

from acvi_tf import errors


class Phase(NamedTuple):
    """Steps ``[start, end)`` trained with these truncation lengths (and coverage)."""

    start: int
    end: int
    max_enc_steps: int
    max_dec_steps: int
    coverage: bool = False

    def __str__(self) -> str:
        return "steps %d-%d: max_enc_steps=%d, max_dec_steps=%d, coverage %s" % (
            self.start,
            self.end,
            self.max_enc_steps,
            self.max_dec_steps,
            "on" if self.coverage else "off",
        )


# The ACVI paper's Table 5 (appendix A): five phases, coverage off, before the coverage
# phase of ``coverage_steps`` (3k in the paper) at the last phase's lengths.
PAPER_PHASES = (
    "0-71000:10:10,71000-116000:50:50,116000-184000:100:50,"
    "184000-223000:200:50,223000-250000:400:100"
)


class PhaseError(errors.UserError, ValueError):
    """A ``--phases`` value that cannot be a curriculum; the message says why."""


def parse_phases(spec: str, coverage_steps: int = 0) -> List[Phase]:
    """Parses ``--phases``: ``paper`` or ``start-end:max_enc:max_dec,...``.

    Args:
      spec: the flag value. Segments must start at 0, be contiguous and increasing, and
        have positive lengths.
      coverage_steps: length of a final coverage phase at the last segment's lengths
        (0: none).

    Returns:
      The list of ``Phase`` in step order.

    Raises:
      PhaseError: with the offending segment and the rule it breaks.
    """
    if spec == "paper":
        spec = PAPER_PHASES
    phases = []
    for item in spec.split(","):
        try:
            span, enc, dec = item.strip().split(":")
            start, end = (int(x) for x in span.split("-"))
            enc, dec = int(enc), int(dec)
        except ValueError as e:
            raise PhaseError(
                "--phases segment %r is not start-end:max_enc:max_dec, e.g. 0-71000:10:10" % item
            ) from e
        expected_start = phases[-1].end if phases else 0
        if start != expected_start:
            raise PhaseError(
                "--phases segment %r starts at %d; it must start at %d (phases "
                "start at 0 and are contiguous)" % (item, start, expected_start)
            )
        if end <= start:
            raise PhaseError(
                "--phases segment %r ends before it starts; steps must increase" % (item,)
            )
        if enc <= 0 or dec <= 0:
            raise PhaseError("--phases segment %r has a non-positive length" % (item,))
        phases.append(Phase(start, end, enc, dec))
    if coverage_steps < 0:
        raise PhaseError("--coverage_steps must be >= 0, got %d" % coverage_steps)
    if coverage_steps:
        last = phases[-1]
        phases.append(
            Phase(
                last.end,
                last.end + coverage_steps,
                last.max_enc_steps,
                last.max_dec_steps,
                coverage=True,
            )
        )
    return phases


def phase_at(phases: Sequence[Phase], step: int) -> Phase:
    """The phase that holds ``step``; the last phase for steps past the end."""
    for phase in phases:
        if step < phase.end:
            return phase
    return phases[-1]


def training_end(phases: Sequence[Phase], max_steps: int, warn: bool = False) -> int:
    """The step training stops at: ``max_steps`` (0: none) or the curriculum's end,
    whichever comes first.

    Args:
      phases: the curriculum (``parse_phases``; one phase without ``--phases``).
      max_steps: ``--max_steps``.
      warn: log a warning where ``max_steps`` is past the curriculum's end (a training
        command, whose steps past it would not be trained).
    """
    end = phases[-1].end
    if warn and max_steps > end:
        logging.warning(
            "--max_steps=%d is past the end of the curriculum (--phases, then "
            "--coverage_steps) at step %d: training stops there; give longer --phases or "
            "more --coverage_steps to train further",
            max_steps,
            end,
        )
    return min(end, max_steps or end)

"""A store that stops answering: when to say so, and how long to wait before trying again.

A pure state machine over an immutable :class:`Outage`, as :mod:`stoker.resilience.breaker` is for
the origin; the loops that use a store (the warm worker, the deadline ticker) feed it
each call's outcome and log what it tells them to.  No I/O, no clock reads: times are
arguments (monotonic seconds).

Invariants:
- The first failure after an answer is said (one log line); while the store keeps
  failing, at most one more line every :data:`SAY_EVERY` seconds; the first answer
  after a failure is said once (``answered`` returns True), so an outage is two lines
  plus one per :data:`SAY_EVERY`, never one per try.
- :func:`retry_in` is :data:`RETRY_FIRST` after the first failure, doubling with each
  further one, never more than ``most``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

RETRY_FIRST: Final = 1.0
"""Seconds before the first try after a failure."""
RETRY_MOST: Final = 30.0
"""The longest wait between two tries."""
SAY_EVERY: Final = 30.0
"""Seconds between two log lines of one outage."""


@dataclass(frozen=True, slots=True)
class Outage:
    """Consecutive failures of one store, and when the last was said; 0: it answers."""

    failures: int = 0
    said_at: float = float("-inf")


def failed(state: Outage, now: float) -> tuple[Outage, bool]:
    """The outage after one more failure at ``now``; whether to say so now."""
    say = state.failures == 0 or now - state.said_at >= SAY_EVERY
    return Outage(state.failures + 1, now if say else state.said_at), say


def answered(state: Outage) -> tuple[Outage, bool]:
    """The state once the store answered; whether it had been failing (say it is back)."""
    return Outage(), state.failures > 0


def retry_in(state: Outage, most: float = RETRY_MOST) -> float:
    """Seconds to wait before the next try after ``state.failures`` failures."""
    return min(most, RETRY_FIRST * 2.0 ** min(max(state.failures, 1) - 1, 30))

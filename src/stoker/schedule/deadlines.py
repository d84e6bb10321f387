"""Pure deadline decisions: arming, failure retries, what is due, and row transitions.

Nothing here reads a clock or a database: every function takes ``now`` and the
current row and returns the new one. The backends apply these transitions under
a row lock, so every store behaves the same.

Invariants:
- ``arm_earliest``: a burst of arms fires once, never later than its first arm
  plus ``delay``.
- ``arm_debounced``: fires ``delay`` after the last arm of a burst, never later
  than ``max_wait`` after its first.
- A deadline armed while its claim is live starts a new burst (the running
  claim may have started before what the arm announces) and is marked
  ``rearmed`` so completing that run keeps it; arms while a claim's lease has
  ended join the pending, overdue, deadline.
- A claim succeeds only on an armed row that no live claim holds and that is
  due within ``slack`` (``force`` drops the due test); ``complete`` and
  ``fail`` change only a row the caller owns.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from stoker.schedule.store import ARM_MODES, MAX_ERROR_CHARS, ArmMode, Deadline

DUE_SLACK = 0.05
"""Timers wake a hair early; a deadline this close (seconds) counts as due.  Far below
the shortest delay a deadline is armed with (a 0.5 s ``rewarm_delay`` must not fire at
once)."""


@dataclass(frozen=True, slots=True)
class Armed:
    """A pending burst: when it is due and when its first arm came."""

    due_at: float
    first_armed_at: float


def arm_earliest(current_due: float | None, now: float, delay: float) -> float:
    """The sooner of the pending due time and ``now + delay``."""
    wanted = now + delay
    return wanted if current_due is None else min(current_due, wanted)


def arm_debounced(state: Armed | None, now: float, delay: float, max_wait: float) -> Armed:
    """``delay`` after this arm, but no later than ``max_wait`` after the burst's first arm."""
    first = now if state is None else state.first_armed_at
    return Armed(min(now + delay, first + max_wait), first)


def replace_on_failure(now: float, retry_delay: float) -> Armed:
    """After a failed run: try again ``retry_delay`` from now (a new burst starts now)."""
    return Armed(now + retry_delay, now)


def check_arm(mode: str, delay: float, max_wait: float | None) -> None:
    """Refuse arguments no arm can mean, naming the offending one."""
    if mode not in ARM_MODES:
        raise ValueError(f"deadline arm mode must be one of {', '.join(ARM_MODES)}, not {mode!r}")
    if not (math.isfinite(delay) and delay >= 0):
        raise ValueError(f"deadline delay must be a finite number >= 0 seconds, got {delay}")
    if (mode == "debounced") != (max_wait is not None):
        raise ValueError("deadline max_wait is required for mode 'debounced' and only for it")
    if max_wait is not None and not (math.isfinite(max_wait) and max_wait >= 0):
        raise ValueError(
            f"deadline max_wait must be a finite number >= 0 seconds, got {max_wait}")


def pending(row: Deadline | None, now: float) -> Armed | None:
    """The burst an arm joins: none when unarmed, or when a live claim runs it and no
    arm has come since the claim."""
    if row is None or row.due_at is None or row.first_armed_at is None:
        return None
    if row.held(now) and not row.rearmed:
        return None
    return Armed(row.due_at, row.first_armed_at)


def next_arm(state: Armed | None, mode: ArmMode, now: float, delay: float,
             max_wait: float | None) -> Armed:
    """The pending burst after one more arm of ``mode`` (arguments checked first)."""
    check_arm(mode, delay, max_wait)
    if mode == "debounced" and max_wait is not None:
        return arm_debounced(state, now, delay, max_wait)
    if mode == "earliest":
        due = arm_earliest(None if state is None else state.due_at, now, delay)
        return Armed(due, now if state is None else state.first_armed_at)
    return Armed(now + delay, now)


def armed(row: Deadline | None, name: str, mode: ArmMode, now: float, delay: float,
          max_wait: float | None = None) -> Deadline:
    """The row after ``arm`` (created when missing)."""
    base = row or Deadline(name)
    burst = next_arm(pending(base, now), mode, now, delay, max_wait)
    return replace(base, due_at=burst.due_at, first_armed_at=burst.first_armed_at,
                   rearmed=base.owner is not None)


def is_due(row: Deadline, now: float, slack: float = DUE_SLACK) -> bool:
    """Armed, due within ``slack`` and not held by a live claim."""
    return row.due_at is not None and row.due_at <= now + slack and not row.held(now)


def due(deadlines: Iterable[Deadline], now: float, slack: float = DUE_SLACK) -> list[Deadline]:
    """The deadlines a ticker should claim now, soonest first."""
    return sorted((row for row in deadlines if is_due(row, now, slack)),
                  key=lambda row: (row.due_at, row.name))


def wake_at(row: Deadline) -> float | None:
    """When a ticker should look at ``row`` again: its due time, or the end of its
    claim's lease when that is later (a run elsewhere may die); ``None`` if unarmed."""
    if row.due_at is None:
        return None
    if row.owner is not None and row.claimed_until is not None:
        return max(row.due_at, row.claimed_until)
    return row.due_at


def next_wake(deadlines: Iterable[Deadline]) -> float | None:
    """The earliest :func:`wake_at` of ``deadlines``."""
    times = [t for t in map(wake_at, deadlines) if t is not None]
    return min(times, default=None)


def claimed(row: Deadline | None, owner: str, now: float, lease: float, *,
            force: bool = False, slack: float = DUE_SLACK) -> Deadline | None:
    """The row claimed by ``owner`` for ``lease`` seconds, or ``None`` when it may not be."""
    if lease <= 0:
        raise ValueError(f"deadline claim lease must be > 0 seconds, got {lease}")
    if row is None or row.due_at is None or row.held(now):
        return None
    if not force and not is_due(row, now, slack):
        return None
    return replace(row, owner=owner, claimed_until=now + lease, attempts=row.attempts + 1,
                   rearmed=False)


def completed(row: Deadline | None, owner: str, now: float) -> Deadline | None:
    """The row after ``owner``'s run succeeded (disarmed unless re-armed), or ``None``
    when ``owner`` does not own the claim."""
    if row is None or row.owner != owner:
        return None
    released = replace(row, owner=None, claimed_until=None, rearmed=False, attempts=0,
                       last_error=None, completed_at=now)
    if row.rearmed:
        return released
    return replace(released, due_at=None, first_armed_at=None)


def failed(row: Deadline | None, owner: str, now: float, retry_delay: float,
           error: str) -> Deadline | None:
    """The row after ``owner``'s run failed: due again after ``retry_delay`` (or at the
    re-arm's time if sooner), ``error`` kept; ``None`` when ``owner`` does not own it."""
    if retry_delay < 0:
        raise ValueError(f"deadline retry_delay must be >= 0 seconds, got {retry_delay}")
    if row is None or row.owner != owner:
        return None
    retry = replace_on_failure(now, retry_delay)
    rearm = pending(row, now) if row.rearmed else None
    burst = rearm if rearm is not None and rearm.due_at <= retry.due_at else retry
    return replace(row, due_at=burst.due_at, first_armed_at=burst.first_armed_at,
                   owner=None, claimed_until=None, rearmed=False,
                   last_error=error[:MAX_ERROR_CHARS])

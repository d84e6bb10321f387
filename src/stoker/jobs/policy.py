"""Retry policy: what happens to a job whose attempt failed. Pure: no I/O, no clock.

Invariants:
- A job that has used ``max_attempts`` attempts is dead; otherwise it retries.
- The retry delay is "full jitter" exponential backoff: uniform in
  ``[0, min(cap, base * 2 ** (attempts - 1)))``, so it never exceeds ``cap``
  (one hour by default) and never goes below zero.
- The random draw is an argument (``rng_value`` in ``[0, 1)``), so the same
  inputs always give the same decision.
"""

from __future__ import annotations

from dataclasses import dataclass

from stoker.jobs.model import truncate_error

BASE_DELAY_SECONDS = 2.0
MAX_DELAY_SECONDS = 3_600.0
_MAX_EXPONENT = 40  # 2**40 * base is far beyond any cap; avoids float overflow


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """``dead`` or retry at ``run_at``; ``error`` is what to store as the last error."""

    dead: bool
    run_at: float
    delay: float
    error: str


def backoff_ceiling(attempts: int, base: float = BASE_DELAY_SECONDS,
                    cap: float = MAX_DELAY_SECONDS) -> float:
    """The upper bound of the jittered delay after ``attempts`` attempts (>= 1)."""
    exponent = min(max(attempts, 1) - 1, _MAX_EXPONENT)
    return min(cap, base * 2.0**exponent)


def decide_retry(
    attempts: int,
    max_attempts: int,
    error: str,
    now: float,
    rng_value: float,
    *,
    base: float = BASE_DELAY_SECONDS,
    cap: float = MAX_DELAY_SECONDS,
) -> RetryDecision:
    """Decide the fate of a job that failed its ``attempts``-th attempt at ``now``."""
    if not 0.0 <= rng_value < 1.0:
        raise ValueError(f"rng_value must be in [0, 1), got {rng_value}")
    stored = truncate_error(error)
    if attempts >= max_attempts:
        return RetryDecision(dead=True, run_at=now, delay=0.0, error=stored)
    delay = rng_value * backoff_ceiling(attempts, base, cap)
    return RetryDecision(dead=False, run_at=now + delay, delay=delay, error=stored)

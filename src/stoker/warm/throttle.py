"""Adaptive warm concurrency: a pure AIMD controller over an immutable ``ThrottleState``.

The warmer feeds :func:`on_result` the outcome of every warm visit (its latency
on the monotonic clock, its status, its ``Retry-After`` header, the wall-clock
``now``) and asks :func:`allowed` how many warm visits may be in flight. No I/O,
no clock reads: time is always an argument.

Latency is tracked twice, as exponentially weighted moving averages: ``recent``
(fast, follows the last few visits) and ``baseline`` (slow, the origin's
unloaded latency). With ``near = tolerance * baseline``:

- a visit answered 429 or 503 is a *backoff*: the limit halves and, when it
  carries ``Retry-After`` (delay-seconds or an HTTP-date), warming waits until
  then (at most ``max_wait`` seconds from ``now``); its latency is not a sample;
- a visit slower than ``near`` while ``recent`` is too is *congestion*: the
  limit halves;
- a visit within ``near`` while ``recent`` is too is *good*: after ``limit``
  good visits in a row the limit grows by one (additive increase: about +1 per
  round trip of a full window);
- anything else (a lone slow visit, another 5xx) holds the limit.

A halving happens at most once per window: a signal from a visit that started
before the last cut (``now - latency < cut_at``) is already accounted for and
changes nothing, so a burst of slow answers from one window halves once, not
down to 1. At the floor (limit 1) a congested visit is the unloaded latency by
definition, so the baseline moves to it instead (the origin became slower).

Invariants (checked by property tests): ``1 <= limit <= max_concurrency``
always; :func:`allowed` is ``limit`` except while waiting out ``Retry-After``
(``now < wait_until``), when it is 0; a wait never ends later than
``max_wait`` after the response that asked for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from stoker.http.dates import parse_http_date

BACKOFF_STATUSES = frozenset({429, 503})
DEFAULT_MAX_WAIT = 600.0
_MAX_DELAY_DIGITS = 15  # longer delay-seconds are "forever": capped by max_wait


@dataclass(frozen=True, slots=True)
class ThrottleState:
    """Controller settings plus where it stands.

    ``max_concurrency`` is ``warm_max_concurrency``; ``tolerance`` is how much
    slower than the baseline still counts as "near"; ``fast``/``slow`` are the
    EWMA weights of a new sample in ``recent``/``baseline``; ``max_wait`` caps
    a ``Retry-After`` wait. A new controller starts at ``limit`` 1, so the
    first samples measure the unloaded origin. ``baseline``/``recent`` are None
    until the first sample; ``streak`` counts good visits since the limit last
    changed.
    """

    max_concurrency: int
    tolerance: float = 1.5
    fast: float = 0.3
    slow: float = 0.05
    max_wait: float = DEFAULT_MAX_WAIT
    limit: int = 1
    baseline: float | None = None
    recent: float | None = None
    streak: int = 0
    cut_at: float = float("-inf")
    wait_until: float = float("-inf")

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError(
                f"warm_max_concurrency must be at least 1, got {self.max_concurrency}")
        if not 1 <= self.limit <= self.max_concurrency:
            raise ValueError(
                f"throttle limit must be within 1..{self.max_concurrency}, got {self.limit}")
        if self.tolerance <= 1:
            raise ValueError(f"throttle tolerance must be above 1, got {self.tolerance}")
        if not (0 < self.fast <= 1 and 0 < self.slow <= 1):
            raise ValueError(
                f"throttle EWMA weights must be within (0, 1], got {self.fast}, {self.slow}")
        if self.max_wait < 0:
            raise ValueError(f"throttle max_wait must not be negative, got {self.max_wait}")


def allowed(state: ThrottleState, now: float) -> int:
    """How many warm visits may be in flight at ``now`` (0 while waiting out Retry-After)."""
    return 0 if now < state.wait_until else state.limit


def on_result(state: ThrottleState, latency: float, status: int,
              retry_after: str | None, now: float) -> ThrottleState:
    """The controller after a warm visit that took ``latency`` seconds ended at ``now``."""
    latency = max(0.0, latency)
    fresh = now - latency >= state.cut_at
    if status in BACKOFF_STATUSES:
        waited = _wait(state, retry_after, now)
        return _cut(waited, now) if fresh else waited
    if status >= 500:
        return state
    if state.baseline is None or state.recent is None:
        return replace(state, baseline=latency, recent=latency)
    recent = _ewma(state.recent, latency, state.fast)
    near = state.tolerance * state.baseline
    if latency > near and recent > near:
        return _congested(replace(state, recent=recent), now, fresh)
    if latency <= near and recent <= near:
        return _good(replace(state, recent=recent), _ewma(state.baseline, latency, state.slow))
    return replace(state, recent=recent)


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """Seconds to wait for a ``Retry-After`` value (delay-seconds or HTTP-date), or None."""
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(text) if len(text) <= _MAX_DELAY_DIGITS else math.inf
    at = parse_http_date(text)
    return None if at is None else max(0.0, at - now)


def _ewma(average: float, sample: float, weight: float) -> float:
    return average + weight * (sample - average)


def _wait(state: ThrottleState, retry_after: str | None, now: float) -> ThrottleState:
    seconds = retry_after_seconds(retry_after, now)
    if seconds is None:
        return state
    until = now + min(seconds, state.max_wait)
    return replace(state, wait_until=max(state.wait_until, until))


def _cut(state: ThrottleState, now: float) -> ThrottleState:
    return replace(state, limit=max(1, state.limit // 2), streak=0, cut_at=now)


def _congested(state: ThrottleState, now: float, fresh: bool) -> ThrottleState:
    if state.limit == 1:
        return replace(state, baseline=state.recent, streak=0)
    return _cut(state, now) if fresh else state


def _good(state: ThrottleState, baseline: float) -> ThrottleState:
    streak = state.streak + 1
    if streak < state.limit:
        return replace(state, baseline=baseline, streak=streak)
    limit = min(state.max_concurrency, state.limit + 1)
    return replace(state, baseline=baseline, streak=0, limit=limit)

"""What a cached call does with what the cache holds.  Pure.

A stored result has three windows from the time it was stored (``ttl``, ``swr``,
``sie``, :class:`Windows`): fresh for ``ttl``; then servable while it is refreshed in
the background for ``swr`` more; and standing in for a failing call for ``sie`` past
its freshness.

Invariants (:func:`decide`, :func:`falls_back`; tested exhaustively):
- A fresh result is returned as it is, and nothing is called.
- A result past its freshness but within its ``swr`` window is returned at once, and the
  function is called in the background to refresh it, once: never while a call of the
  same key is in flight in this process.
- Any other case calls the function (callers of one key share that call); the caller
  waits for it.  Only a result the call could fall back on is worth keeping: one still
  within its windows when the call fails (:func:`falls_back`) is returned instead of the
  exception; otherwise the exception reaches every caller that waited for the call.
- Windows are absolute times: ``fresh_until <= stale_until``, ``fresh_until <=
  error_until``, ``keep_until = max(stale_until, error_until)`` (the
  :class:`~stoker.cache.entry.CacheEntry` invariants); a soft purge makes a result stale
  (its windows kept), a hard purge removes it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol


class Step(enum.Enum):
    """What a call does."""

    HIT = "hit"
    """Return the stored result."""
    HIT_REFRESH = "hit+refresh"
    """Return the stored result and refresh it once, in the background."""
    CALL = "call"
    """Call the function (shared by the key's callers) and wait for it."""


@dataclass(frozen=True, slots=True)
class Windows:
    """A cached function's lifetimes, in seconds (each at least 0)."""

    ttl: float
    swr: float = 0.0
    sie: float = 0.0

    def __post_init__(self) -> None:
        for name in ("ttl", "swr", "sie"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be a duration of at least 0, got "
                                 f"{getattr(self, name)!r}")

    def times(self, now: float) -> Times:
        """The absolute times of a result stored at ``now``."""
        fresh = now + self.ttl
        stale, error = fresh + self.swr, fresh + self.sie
        return Times(fresh, stale, error, max(stale, error))


@dataclass(frozen=True, slots=True)
class Times:
    """A stored result's windows as absolute times (epoch seconds)."""

    fresh_until: float
    stale_until: float
    error_until: float
    keep_until: float


class Held(Protocol):
    """A stored result's windows (a :class:`Times`, or the
    :class:`~stoker.cache.entry.CacheEntry` itself)."""

    @property
    def fresh_until(self) -> float: ...

    @property
    def stale_until(self) -> float: ...

    @property
    def error_until(self) -> float: ...


def decide(held: Held | None, now: float, *, in_flight: bool) -> Step:
    """What a call of a key whose stored result has windows ``held`` (``None``: none)
    does at ``now``; ``in_flight``: a call of that key is running in this process."""
    if held is None:
        return Step.CALL
    if now < held.fresh_until:
        return Step.HIT
    if now < held.stale_until:
        return Step.HIT if in_flight else Step.HIT_REFRESH
    return Step.CALL


def falls_back(held: Held | None, now: float) -> bool:
    """Whether a call that failed at ``now`` answers with the stored result of windows
    ``held`` instead of its exception: it is still within one of its windows."""
    return held is not None and now < max(held.fresh_until, held.stale_until,
                                           held.error_until)

"""The one hit ratio: how visitors' requests were answered, and the share the cache answered.

``stoker status``, ``GET /api/status`` (and each member's line), the dashboard and
``GET /metrics`` all read it from here (docs/operations.md, "The hit ratio").

Invariants:
- Warm visits (the warmer's own requests) are never part of the ratio: they are counted
  apart, as ``warm``.
- Every visitor's request lands in exactly one of ``cache``, ``miss``, ``uncacheable``,
  ``origin_failure`` and ``error`` (Stoker's own refusals: 400, 405, 431, a generated
  answer), whatever its kind or reason.
- A 502/503/504 Stoker gives because the origin failed (an ``error`` outcome whose reason
  is one of :data:`ORIGIN_FAILURES`) is an origin failure, never Stoker's own error.
- Pure: functions of outcome counts keyed ``(kind, reason, warm)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from stoker.cache.outcome import ORIGIN_FAILURES

CACHE_KINDS: Final = frozenset({"hit", "stale-while-revalidate", "stale-if-error",
                                "revalidated"})
"""Outcomes whose body came from the cache (a revalidation: the origin said 304)."""
MISS_KINDS: Final = frozenset({"miss", "collapsed"})
"""Outcomes whose body the origin gave for a cacheable request (a collapsed request:
another's fetch)."""
UNCACHEABLE_KINDS: Final = frozenset({"pass", "bypass"})
"""Outcomes forwarded past the cache: the request (bypass) or the response (pass) may not
be cached; the reason says why."""
ORIGIN_KINDS: Final = MISS_KINDS | UNCACHEABLE_KINDS
"""Outcomes whose body came from the origin."""
REQUEST_KINDS: Final = ("hit", "stale", "miss", "bypass")
"""Counters of ``Pipeline.stats`` that together count every request answered (the others,
collapsed and error, count requests among them)."""
PLACES: Final = ("cache", "miss", "uncacheable", "origin_failure", "error", "warm")
"""Where :func:`place` puts a request."""
ANSWERED: Final = ("cache", "miss", "uncacheable", "origin_failure")
"""The places of the visitors' requests the hit ratio is a share of."""


def place(kind: str, reason: str, warm: bool) -> str:
    """Which of :data:`PLACES` a request with this outcome counts in.  Pure."""
    if warm:
        return "warm"
    if kind in CACHE_KINDS:
        return "cache"
    if kind in MISS_KINDS:
        return "miss"
    if kind in UNCACHEABLE_KINDS:
        return "uncacheable"
    return "origin_failure" if reason in ORIGIN_FAILURES else "error"


def places(outcomes: Mapping[tuple[str, str, bool], int]) -> dict[str, int]:
    """The requests in each of :data:`PLACES`, from outcome counts.  Pure."""
    found = dict.fromkeys(PLACES, 0)
    for (kind, reason, warm), count in outcomes.items():
        found[place(kind, reason, warm)] += count
    return found


def total_requests(stats: Mapping[str, int]) -> int:
    """Requests answered, of ``Pipeline.stats``' counters: the sum of
    :data:`REQUEST_KINDS`, which count each request once.  Pure."""
    return sum(stats.get(kind, 0) for kind in REQUEST_KINDS)


def answered(split: Mapping[str, int]) -> int:
    """Visitors' requests answered, of a :func:`places`: from the cache, by a miss, passed
    or bypassed, or failed by the origin.  Pure."""
    return sum(split.get(where, 0) for where in ANSWERED)


def hit_ratio(split: Mapping[str, int]) -> float | None:
    """The hit ratio of a :func:`places` (0 to 1, 4 decimals; ``None`` before any visitor's
    request was answered)::

        hit ratio = cache / (cache + miss + uncacheable + origin_failure)

    ``cache``: fresh hits, stale answers and revalidations (the body came from the cache);
    ``miss``: misses and collapsed requests; ``uncacheable``: passes and bypasses;
    ``origin_failure``: the 502/503/504 Stoker gave because the origin failed.  Warm visits
    and Stoker's own refusals are not in it.  Pure."""
    total = answered(split)
    return round(split.get("cache", 0) / total, 4) if total else None


def uncacheable_reasons(outcomes: Mapping[tuple[str, str, bool], int]) -> dict[str, int]:
    """Visitors' passes and bypasses by reason (``"pass: no-freshness"``), most first.
    Pure."""
    found: dict[str, int] = {}
    for (kind, reason, warm), count in outcomes.items():
        if count and not warm and kind in UNCACHEABLE_KINDS:
            label = f"{kind}: {reason or 'unknown'}"
            found[label] = found.get(label, 0) + count
    return dict(sorted(found.items(), key=lambda item: (-item[1], item[0])))

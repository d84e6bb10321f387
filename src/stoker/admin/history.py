"""The last hour of the overview's figures, per minute, kept in memory.

The counters Stoker keeps anyway only grow; :class:`History` takes a :class:`Sample` of
them now and then (the status hub, every second) and remembers the first sample of each
minute, so a minute's figure is the difference between the next minute's first sample
and its own (the current minute's, between now and its first).

Invariants:
- At most :data:`MINUTES` + 1 minute samples and the samples of the last
  :data:`RATE_WINDOW` seconds are kept, whatever the traffic.
- A minute no sample was taken in shows as none (never a made-up figure); a counter
  that went back (the pipeline was replaced) counts as 0 for that minute.
- Pure but for the two bounded deques; ``now`` is always an argument.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Final

from stoker.origin.timing import BUCKETS

MINUTES: Final = 60
"""Minutes of history the charts show."""
RATE_WINDOW: Final = 10.0
"""Seconds the request rate is averaged over."""


@dataclass(frozen=True, slots=True)
class Sample:
    """The cumulative counters at ``at`` (wall-clock seconds)."""

    at: float
    requests: int
    """Visitors' requests answered."""
    cache: int
    """… of them answered from the cache."""
    errors: int
    """Origin requests that got no answer."""
    served: int = 0
    """Body bytes visitors were answered with from the cache."""
    timing: tuple[int, ...] = ()
    """The origin answer-time histogram's bucket counts (see ``OriginTiming``)."""


def minute_of(at: float) -> int:
    """The minute (epoch seconds, a multiple of 60) ``at`` falls in.  Pure."""
    return int(at // 60) * 60


def quantile(counts: Sequence[int], q: float) -> float | None:
    """The ``q``-quantile of the answer times in bucket counts, as Prometheus's
    ``histogram_quantile`` estimates it (linear within a bucket; the highest finite
    bound when it falls past every bound); ``None`` without answers.  Pure."""
    total = sum(counts)
    if total <= 0:
        return None
    rank = q * total
    seen, lower = 0, 0.0
    for bound, count in zip((*BUCKETS, math.inf), counts, strict=False):
        if count > 0 and seen + count >= rank:
            if bound == math.inf:
                return BUCKETS[-1]
            return lower + (bound - lower) * (rank - seen) / count
        seen += count
        lower = bound if bound != math.inf else lower
    return BUCKETS[-1]


def _delta(later: Sequence[int], earlier: Sequence[int]) -> list[int]:
    if len(later) != len(earlier):
        return list(later)
    return [max(0, b - a) for a, b in zip(earlier, later, strict=True)]


def minute_figures(start: Sample, end: Sample) -> dict[str, Any]:
    """The figures of the minute that began with ``start``, up to ``end``.  Pure."""
    requests = max(0, end.requests - start.requests)
    cache = min(requests, max(0, end.cache - start.cache))
    timing = _delta(end.timing, start.timing)
    return {"minute": minute_of(start.at), "requests": requests, "cache": cache,
            "origin": requests - cache, "errors": max(0, end.errors - start.errors),
            "served": max(0, end.served - start.served),
            "p50": quantile(timing, 0.5), "p99": quantile(timing, 0.99)}


class History:
    """The minute samples of the last hour and the samples of the last seconds."""

    def __init__(self) -> None:
        self._minutes: deque[Sample] = deque(maxlen=MINUTES + 1)
        self._recent: deque[Sample] = deque()

    def observe(self, sample: Sample) -> None:
        """Take ``sample`` (samples come in time order)."""
        if not self._minutes or minute_of(self._minutes[-1].at) != minute_of(sample.at):
            self._minutes.append(sample)
        self._recent.append(sample)
        while self._recent and self._recent[0].at < sample.at - RATE_WINDOW:
            self._recent.popleft()

    def minutes(self, now: Sample) -> list[dict[str, Any]]:
        """Each minute of the last hour that had a sample, oldest first, with ``now``
        closing the current one."""
        samples = [*self._minutes, now]
        rows = [minute_figures(start, end) for start, end in pairwise(samples)
                if minute_of(end.at) - minute_of(start.at) <= 60]
        return [row for row in rows if row["minute"] > minute_of(now.at) - MINUTES * 60]

    def rate(self, now: Sample) -> float:
        """Visitors' requests per second over the last :data:`RATE_WINDOW` seconds."""
        first = next((s for s in self._recent if s.at >= now.at - RATE_WINDOW), None)
        if first is None or now.at <= first.at:
            return 0.0
        return max(0, now.requests - first.requests) / (now.at - first.at)

"""The overview's figures over three windows (the last 5 minutes, hour and day), kept in
memory.

The counters Stoker keeps anyway only grow; :class:`History` takes a :class:`Sample` of
them now and then (the status hub, every second) and, for each window of :data:`WINDOWS`,
remembers the first sample of each of its slots (5 s, 1 min, 24 min), so a slot's figure
is the difference between the next slot's first sample and its own (the current slot's,
between now and its first).

Invariants:
- Memory is bounded whatever the traffic or the uptime: at most :data:`POINTS` + 1
  samples per window and the samples of the last :data:`RATE_WINDOW` seconds.
- A slot no sample was taken in shows as none (never a made-up figure); a counter that
  went back (the pipeline was replaced) counts as 0 for that slot.
- Pure but for the bounded deques; ``now`` is always an argument.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Final

from stoker.origin.timing import BUCKETS

POINTS: Final = 60
"""Slots each window shows."""
WINDOWS: Final = {"5m": 5.0, "1h": 60.0, "1d": 1440.0}
"""Each window the charts offer: its name → its slot's length in seconds (times
:data:`POINTS`: 5 minutes, an hour, a day)."""
RATE_WINDOW: Final = 10.0
"""Seconds the request rate is averaged over."""


@dataclass(frozen=True, slots=True)
class Sample:
    """The cumulative counters at ``at`` (wall-clock seconds)."""

    at: float
    requests: int
    """Visitors' requests answered (:func:`~stoker.admin.hit_ratio.answered`)."""
    cache: int
    """… of them answered from the cache."""
    errors: int
    """Origin requests that got no answer."""
    served: int = 0
    """Body bytes visitors were answered with from the cache."""
    timing: tuple[int, ...] = ()
    """The origin answer-time histogram's bucket counts (see ``OriginTiming``)."""


def slot_of(at: float, step: float) -> float:
    """The start (epoch seconds, a multiple of ``step``) of the slot ``at`` falls in.
    Pure."""
    return math.floor(at / step) * step


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


def slot_figures(start: Sample, end: Sample, step: float) -> dict[str, Any]:
    """The figures of the ``step``-long slot that began with ``start``, up to ``end``.
    Pure."""
    requests = max(0, end.requests - start.requests)
    cache = min(requests, max(0, end.cache - start.cache))
    timing = _delta(end.timing, start.timing)
    return {"at": slot_of(start.at, step), "requests": requests, "cache": cache,
            "origin": requests - cache, "errors": max(0, end.errors - start.errors),
            "served": max(0, end.served - start.served),
            "p50": quantile(timing, 0.5), "p99": quantile(timing, 0.99)}


class Ring:
    """The first sample of each of the last :data:`POINTS` slots of ``step`` seconds."""

    def __init__(self, step: float) -> None:
        self.step = step
        self._firsts: deque[Sample] = deque(maxlen=POINTS + 1)

    def observe(self, sample: Sample) -> None:
        """Keep ``sample`` if it is its slot's first (samples come in time order)."""
        last = self._firsts[-1] if self._firsts else None
        if last is None or slot_of(last.at, self.step) != slot_of(sample.at, self.step):
            self._firsts.append(sample)

    def rows(self, now: Sample) -> list[dict[str, Any]]:
        """Each slot of the window that had a sample, oldest first, ``now`` closing the
        current one."""
        samples = [*self._firsts, now]
        step = self.step
        rows = [slot_figures(start, end, step) for start, end in pairwise(samples)
                if slot_of(end.at, step) - slot_of(start.at, step) <= step]
        return [row for row in rows if row["at"] > slot_of(now.at, step) - POINTS * step]


class History:
    """A :class:`Ring` per window of :data:`WINDOWS` and the samples of the last seconds."""

    def __init__(self) -> None:
        self._rings = {name: Ring(step) for name, step in WINDOWS.items()}
        self._recent: deque[Sample] = deque()

    def observe(self, sample: Sample) -> None:
        """Take ``sample`` (samples come in time order)."""
        for ring in self._rings.values():
            ring.observe(sample)
        self._recent.append(sample)
        while self._recent and self._recent[0].at < sample.at - RATE_WINDOW:
            self._recent.popleft()

    def windows(self, now: Sample) -> dict[str, dict[str, Any]]:
        """Each window's slot length (``step``, seconds) and rows (:meth:`Ring.rows`)."""
        return {name: {"step": ring.step, "rows": ring.rows(now)}
                for name, ring in self._rings.items()}

    def rate(self, now: Sample) -> float:
        """Visitors' requests per second over the last :data:`RATE_WINDOW` seconds."""
        first = next((s for s in self._recent if s.at >= now.at - RATE_WINDOW), None)
        if first is None or now.at <= first.at:
            return 0.0
        return max(0, now.requests - first.requests) / (now.at - first.at)

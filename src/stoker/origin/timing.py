"""How long the origin takes to answer: a fixed-bucket histogram, the failures, and the
body bytes read from it.

Every origin request that :class:`~stoker.origin.monitored.MonitoredOrigin` sees is
observed once: an answer by the seconds until its head arrived (:meth:`OriginTiming.answered`),
no answer as a failure (:meth:`OriginTiming.failed`); a cancelled request is neither.

Invariants: ``counts[i]`` is the number of answers that took at most ``BUCKETS[i]``
seconds and more than ``BUCKETS[i - 1]`` (the last, past every bound); ``answers`` is
their sum and ``seconds`` the sum of their times; ``body_bytes`` counts every body byte
read from the origin (visitors' requests and warm visits alike).  Pure apart from the counters; the
buckets are Prometheus's defaults, for dashboards that expect them.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Final

BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                  7.5, 10.0)
"""Upper bounds, in seconds, of every bucket but the last (which has none)."""


class OriginTiming:
    """Origin answer times and failures of one process."""

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)
        self.answers = 0
        self.seconds = 0.0
        self.failures = 0
        self.body_bytes = 0

    def answered(self, seconds: float) -> None:
        """The origin answered after ``seconds``."""
        self.counts[bisect_left(BUCKETS, seconds)] += 1
        self.answers += 1
        self.seconds += seconds

    def failed(self) -> None:
        """The origin gave no answer (refused, reset, timed out)."""
        self.failures += 1

    def cumulative(self) -> list[tuple[float, int]]:
        """``(bound, answers that took at most bound)`` for each bucket, ending with
        ``(inf, answers)``: the histogram as Prometheus exposes it."""
        total, rows = 0, []
        for bound, count in zip((*BUCKETS, float("inf")), self.counts, strict=True):
            total += count
            rows.append((bound, total))
        return rows

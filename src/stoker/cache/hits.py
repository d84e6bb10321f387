"""Hit statistics: per-URL hit/miss counters in memory, and the port that stores their sums.

The proxy calls :meth:`HitCounter.hit` / :meth:`HitCounter.miss` for every
visitor request it answers (warm visits are not counted); on the flush deadline
and on graceful shutdown the owner calls :meth:`HitCounter.drain` and hands the
result to :meth:`HitStatsStore.add`. The warmer orders its work with
:meth:`HitStatsStore.top` and :meth:`HitStatsStore.popularity`.

Invariants of :class:`HitCounter` (one event loop; every method is synchronous,
so each is atomic with respect to the loop's other tasks):
- it holds at most ``max_urls`` URLs, each :func:`countable` (longer ones are
  not counted: the warmer would not visit them, and a database index could
  not hold them);
- bound policy, "keep the most visited": when a new URL arrives at a full
  table, the least-visited quarter of the table (visits = hits + misses; among
  equals, the earliest added: as many visits in less time is the better rate)
  is dropped to make room, so hot URLs seen late still get in and the
  amortised cost stays O(log n) per new URL;
  dropped visits are lost and counted in :attr:`HitCounter.dropped`;
- :meth:`HitCounter.drain` returns every count recorded since the last drain
  exactly once and leaves the table empty; what a flush could not store goes back
  with :meth:`HitCounter.restore`, added to what was counted meanwhile, so a store
  that does not answer (its database restarting) delays the counts, never drops them.

Invariants of a :class:`HitStatsStore`: ``add`` increments (never overwrites)
the stored sums, so flushes from several processes or nodes add up; a URL's
``visits`` is the sum of all hits and misses added for it since it was last
pruned; URLs that are not :func:`countable` are skipped.  Origins (``scheme://host``
of visitors' requests, :mod:`stoker.warm.origins`) are summed the same way, at most
:data:`MAX_SEEN_ORIGINS` rows kept.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias

MAX_URL_LENGTH = 2048
DEFAULT_MAX_URLS = 100_000

Counts: TypeAlias = dict[str, tuple[int, int]]
"""``url -> (hits, misses)``."""


def countable(url: str) -> bool:
    """True when ``url`` is storable text within :data:`MAX_URL_LENGTH` bytes of UTF-8
    (sitemaps.org's cap): no NUL, no lone surrogate."""
    if len(url) > MAX_URL_LENGTH or "\x00" in url:
        return False
    try:
        return len(url.encode("utf-8")) <= MAX_URL_LENGTH
    except UnicodeEncodeError:
        return False


class HitCounter:
    """Bounded in-memory hit/miss counters per URL (see the module docstring)."""

    def __init__(self, max_urls: int = DEFAULT_MAX_URLS) -> None:
        if max_urls < 1:
            raise ValueError(f"a hit counter needs max_urls of at least 1, got {max_urls}")
        self._max_urls = max_urls
        self._table: dict[str, list[int]] = {}
        self.dropped = 0
        """Visits not counted: URLs too long, or evicted to keep the table bounded."""

    def __len__(self) -> int:
        return len(self._table)

    def hit(self, url: str) -> None:
        """Count a request for ``url`` answered from the cache."""
        self._count(url, 0)

    def miss(self, url: str) -> None:
        """Count a request for ``url`` that went to the origin."""
        self._count(url, 1)

    def drain(self) -> Counts:
        """Every count since the last drain, ``url -> (hits, misses)``; the table starts over."""
        table, self._table = self._table, {}
        return {url: (hits, misses) for url, (hits, misses) in table.items()}

    def restore(self, counts: Mapping[str, tuple[int, int]]) -> None:
        """Put back drained ``counts`` a flush could not store (the next flush has them)."""
        for url, (hits, misses) in counts.items():
            row = self._row(url)
            row[0] += hits
            row[1] += misses

    def _count(self, url: str, column: int) -> None:
        if url not in self._table and not countable(url):
            self.dropped += 1
            return
        self._row(url)[column] += 1

    def _row(self, url: str) -> list[int]:
        """``url``'s counters, added (making room first) when missing."""
        counts = self._table.get(url)
        if counts is None:
            if len(self._table) >= self._max_urls:
                self._evict()
            counts = self._table[url] = [0, 0]
        return counts

    def _evict(self) -> None:
        """Drop the least-visited quarter (at least one URL), earliest added among equals."""
        victims = heapq.nsmallest(max(1, self._max_urls // 4), self._table.items(),
                                  key=lambda item: item[1][0] + item[1][1])
        for url, (hits, misses) in victims:
            del self._table[url]
            self.dropped += hits + misses


@dataclass(frozen=True, slots=True)
class SeenOrigin:
    """Visitors' requests on one ``scheme://host`` (``""``: every host not the site's),
    summed over flushes, and when the last were flushed."""

    origin: str
    visits: int
    last_seen: float


MAX_SEEN_ORIGINS = 32
"""Most origin rows a :class:`HitStatsStore` keeps (the most visited)."""


class HitStatsStore(Protocol):
    """Persisted visit sums per URL (SQLite by default, PostgreSQL with ``database_url``)."""

    async def add(self, counts: Mapping[str, tuple[int, int]], now: float) -> None:
        """Add ``url -> (hits, misses)`` to the stored sums; ``now`` becomes their last seen."""

    async def top(self, limit: int) -> list[tuple[str, int]]:
        """The ``limit`` most visited ``(url, visits)``, most visited first (ties: by URL)."""

    async def popularity(self, urls: Sequence[str]) -> dict[str, int]:
        """``url -> visits`` for each of ``urls`` (0 for a URL never counted)."""

    async def add_origins(self, visits: Mapping[str, int], now: float) -> None:
        """Add ``origin -> visits`` to the origins' sums (``now`` their last seen), then
        keep the :data:`MAX_SEEN_ORIGINS` most visited."""

    async def origins(self) -> list[SeenOrigin]:
        """The origins' sums, most visited first (ties: by origin)."""

    async def prune(self, older_than: float) -> int:
        """Forget URLs (and origins) last seen before ``older_than``; return how many
        URLs were forgotten."""

    async def close(self) -> None:
        """Release the store's connections."""

"""Refresh ahead: the entries visitors read, and which of them are due for a refresh.

The pipeline tells a :class:`ReadTracker` of every visitor request answered from an
entry or stored from the origin (:meth:`ReadTracker.read`), and of every entry a fetch
renewed, whoever asked (:meth:`ReadTracker.renewed`: a warm visit, a background
revalidation).  The refresher (:mod:`stoker.warm.refresh`) asks :meth:`ReadTracker.due`
which entries to revalidate now, and revisits them before they go stale.  Pure: no
clock (every time is an argument), no I/O.

Invariants:
- A :class:`Read` is keyed by the entry's URL and variant; it holds the request headers
  the entry's ``Vary`` names, as the visitor sent them, so a refresh asks for the same
  variant.  An entry that varies on ``Cookie``, ``Authorization`` or ``*`` is never
  tracked (a refresh would need a visitor's credentials).
- :meth:`ReadTracker.read` is the hit path's cost: one dict lookup and a few attribute
  writes for a known entry (the headers are picked only when an entry is first seen).
- At most ``max_entries`` reads are held: a new one arriving at a full table drops the
  quarter that least deserves a refresh (outside the window first, then the fewest
  requests, then the earliest read).
- :func:`lead`: an entry is refreshed ``refresh_ahead`` seconds before it goes stale, or
  when ``1 - REFRESH_SHARE`` of its lifetime has passed if that comes later (a 60 s page
  12 s before); an entry fresh for less than :data:`MIN_LIFETIME` is never refreshed.
- :func:`due` picks the reads whose refresh time has come, read by a visitor within
  ``window`` and not claimed (``not_before``), most requested first, at most ``limit``;
  and says when the next one comes due.  :meth:`ReadTracker.due` also forgets the reads
  older than the window (no visitor asked: their entries are left to expire).
- A renewal that makes an entry fresher releases its claim (``not_before``); a claimed
  read whose refresh failed comes due again at its ``not_before``.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from stoker.cache.entry import CacheEntry

Header = tuple[bytes, bytes]

REFRESH_SHARE: Final = 0.2
"""The share of a short lifetime left when its entry is refreshed."""
MIN_LIFETIME: Final = 1.0
"""Seconds of freshness under which an entry is not refreshed ahead."""
UNTRACKED_VARY: Final = frozenset({"cookie", "authorization", "*"})
"""Vary names whose entries are not refreshed: they belong to someone's credentials."""


class Read:
    """What visitors asked of one entry (see the module invariants)."""

    __slots__ = ("count", "fresh_until", "headers", "last_read", "not_before",
                 "response_time", "url")

    def __init__(self, url: str, headers: tuple[Header, ...], entry: CacheEntry,
                 now: float) -> None:
        self.url = url
        self.headers = headers
        """The request headers the entry's ``Vary`` names (names lower-case)."""
        self.count = 1
        self.last_read = now
        self.fresh_until = entry.fresh_until
        self.response_time = entry.response_time
        self.not_before = 0.0
        """Claimed by a refresh until then."""

    @property
    def lifetime(self) -> float:
        """Seconds the entry stays fresh from its response."""
        return self.fresh_until - self.response_time

    def refresh_at(self, refresh_ahead: float) -> float:
        """When the entry is refreshed (:func:`lead` before it goes stale)."""
        return self.fresh_until - lead(self.lifetime, refresh_ahead)


@dataclass(frozen=True, slots=True)
class Due:
    """What :func:`due` picked: ``keys`` to refresh now, most requested first, and when
    the next read comes due (None: none will without another read or renewal)."""

    keys: Sequence[str]
    next_at: float | None


def lead(lifetime: float, refresh_ahead: float) -> float:
    """Seconds before it goes stale an entry fresh for ``lifetime`` is refreshed."""
    return min(refresh_ahead, lifetime * REFRESH_SHARE)


def read_key(entry: CacheEntry) -> str:
    """The key of ``entry``'s read: its URL, and its variant when it has one."""
    return entry.url if not entry.variant else f"{entry.url}\n{entry.variant}"


def vary_headers(vary: Iterable[str], headers: Sequence[Header]) -> tuple[Header, ...] | None:
    """The fields of ``headers`` that ``vary`` names, in order (None when it names one a
    refresh may not send: :data:`UNTRACKED_VARY`)."""
    names = {name.lower() for name in vary}
    if names & UNTRACKED_VARY:
        return None
    wanted = {name.encode("latin-1") for name in names}
    return tuple((name, value) for name, value in headers if name.lower() in wanted)


def due(reads: Mapping[str, Read], now: float, *, refresh_ahead: float, window: float,
        limit: int) -> Due:
    """The reads to refresh at ``now`` (see the module invariants)."""
    since = now - window
    ready: list[tuple[int, str]] = []
    next_at: float | None = None
    for key, read in reads.items():
        if read.last_read < since or read.lifetime < MIN_LIFETIME:
            continue
        at = max(read.refresh_at(refresh_ahead), read.not_before)
        if at <= now:
            ready.append((read.count, key))
        elif next_at is None or at < next_at:
            next_at = at
    picked = heapq.nlargest(limit, ready, key=lambda item: item[0])
    if len(ready) > limit:
        next_at = now
    return Due([key for _, key in picked], next_at)


class ReadTracker:
    """The entries visitors read, bounded (see the module invariants)."""

    __slots__ = ("_reads", "max_entries", "refreshes", "window")

    def __init__(self, max_entries: int, window: float) -> None:
        if max_entries < 1:
            raise ValueError(f"a read tracker needs max_entries of at least 1, got {max_entries}")
        self.max_entries = max_entries
        self.window = window
        self._reads: dict[str, Read] = {}
        self.refreshes: Counter[str] = Counter()
        """Refreshes done, by result (counted by :mod:`stoker.warm.refresh`)."""

    def __len__(self) -> int:
        return len(self._reads)

    def get(self, key: str) -> Read | None:
        """The read kept under ``key``, if any."""
        return self._reads.get(key)

    def read(self, entry: CacheEntry, headers: Sequence[Header], now: float) -> None:
        """A visitor's request with ``headers`` was answered from ``entry`` (or stored it)."""
        key = entry.url if not entry.variant else f"{entry.url}\n{entry.variant}"
        read = self._reads.get(key)
        if read is None:
            self._add(key, entry, headers, now)
            return
        read.count += 1
        read.last_read = now
        if entry.fresh_until > read.fresh_until:
            read.fresh_until = entry.fresh_until
            read.response_time = entry.response_time
            read.not_before = 0.0

    def renewed(self, entry: CacheEntry) -> None:
        """A fetch stored ``entry`` (a refresh, a warm visit, a revalidation)."""
        read = self._reads.get(read_key(entry))
        if read is not None and entry.fresh_until > read.fresh_until:
            read.fresh_until = entry.fresh_until
            read.response_time = entry.response_time
            read.not_before = 0.0

    def claim(self, key: str, until: float) -> None:
        """Claim ``key``'s read (if still kept) for a refresh until ``until``: it is not due
        before unless renewed."""
        read = self._reads.get(key)
        if read is not None:
            read.not_before = until

    def due(self, now: float, *, refresh_ahead: float, limit: int) -> Due:
        """Forget the reads older than the window; :func:`due` for the rest."""
        since = now - self.window
        for key in [key for key, read in self._reads.items() if read.last_read < since]:
            del self._reads[key]
        return due(self._reads, now, refresh_ahead=refresh_ahead, window=self.window,
                   limit=limit)

    def _add(self, key: str, entry: CacheEntry, headers: Sequence[Header], now: float) -> None:
        picked = vary_headers(entry.vary, headers) if entry.vary else ()
        if picked is None:
            return
        if len(self._reads) >= self.max_entries:
            self._evict(now)
        self._reads[key] = Read(entry.url, picked, entry, now)

    def _evict(self, now: float) -> None:
        """Drop the quarter (at least one) least deserving a refresh."""
        since = now - self.window
        victims = heapq.nsmallest(
            max(1, self.max_entries // 4), self._reads.items(),
            key=lambda item: (item[1].last_read >= since, item[1].count, item[1].last_read))
        for key, _ in victims:
            del self._reads[key]

"""Refresh ahead: the entries visitors read, and which of them are due for a refresh.

The pipeline tells a :class:`ReadTracker` of every visitor request answered from an
entry or stored from the origin (:meth:`ReadTracker.read`), and of every entry a fetch
renewed, whoever asked (:meth:`ReadTracker.renewed`: a warm visit, a background
revalidation).  The refresher (:mod:`stoker.warm.refresh`) takes the entries due from
:meth:`ReadTracker.due` and revalidates them before they go stale.  Pure: no clock
(every time is an argument), no I/O.

Invariants:
- A :class:`Read` is keyed by the entry's URL and variant; it holds the request headers
  the entry's ``Vary`` names, as the visitor sent them, so a refresh asks for the same
  variant.  An entry that varies on ``Cookie``, ``Authorization`` or ``*`` is never
  tracked (a refresh would need a visitor's credentials).
- :meth:`ReadTracker.read` is the hit path's cost: one dict lookup and a few attribute
  writes for a known entry (the headers are picked when an entry is first seen, and its
  refresh is scheduled anew only when a fresher copy is read).
- At most ``max_entries`` reads are held: a new one arriving at a full table drops the
  quarter that least deserves a refresh (outside the window first, then the fewest
  requests, then the earliest read).
- :func:`lead`: an entry is refreshed ``refresh_ahead`` seconds before it goes stale, or
  when ``1 - REFRESH_SHARE`` of its lifetime has passed if that comes later (a 60 s page
  12 s before); an entry fresh for less than :data:`MIN_LIFETIME` is never refreshed.
- A read is *due* at ``now`` when its refresh time (and the end of its claim) has come
  and a visitor read it within ``window`` of ``now``.  :meth:`ReadTracker.due` hands out
  the due reads with the most requests, at most ``limit``, and claims each for
  :func:`retry_after` seconds (not due again before, unless renewed); it forgets the
  reads it finds outside the window.  Its cost is that of the reads due, not of the
  table: the refresh times are kept in a heap, and the reads come due wait in a pool
  while more are due than one call hands out (covered reads left waiting by
  ``covered=False`` wait in a pool of their own, looked at again only by a call that
  may hand them out: a warm run that lasts minutes costs its ticks nothing per covered
  read).
- A renewal that makes an entry fresher releases its claim and schedules it anew.
- A read is *covered* when its entry may be served stale for at least
  :data:`STALE_COVER` past its freshness (``stale-while-revalidate``, ``default_swr``): a
  visitor then gets it at once and its revalidation runs behind.  ``due(…,
  covered=False)`` leaves covered reads waiting (neither handed out nor forgotten) and
  hands out the others: while a warm run fills cold pages, the origin's budget goes to
  the pages a visitor would wait for first.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from stoker.cache.entry import CacheEntry

Header = tuple[bytes, bytes]

REFRESH_SHARE: Final = 0.2
"""The share of a short lifetime left when its entry is refreshed."""
MIN_LIFETIME: Final = 1.0
"""Seconds of freshness under which an entry is not refreshed ahead."""
MIN_RETRY: Final = 1.0
"""Seconds at least a read handed out for a refresh is claimed."""
STALE_COVER: Final = 300.0
"""Seconds of stale service past freshness that make a read *covered* (see the module)."""
UNTRACKED_VARY: Final = frozenset({"cookie", "authorization", "*"})
"""Vary names whose entries are not refreshed: they belong to someone's credentials."""


class Read:
    """What visitors asked of one entry (see the module invariants)."""

    __slots__ = ("count", "due_at", "fresh_until", "headers", "last_read", "not_before",
                 "response_time", "stale_until", "url")

    def __init__(self, url: str, headers: tuple[Header, ...], entry: CacheEntry,
                 now: float) -> None:
        self.url = url
        self.headers = headers
        """The request headers the entry's ``Vary`` names (names lower-case)."""
        self.count = 1
        self.last_read = now
        self.fresh_until = entry.fresh_until
        self.stale_until = entry.stale_until
        self.response_time = entry.response_time
        self.not_before = 0.0
        """Claimed by a refresh until then."""
        self.due_at = -1.0
        """When it is scheduled to come due (-1: never, its lifetime is too short)."""

    @property
    def lifetime(self) -> float:
        """Seconds the entry stays fresh from its response."""
        return self.fresh_until - self.response_time

    @property
    def covered(self) -> bool:
        """Whether the entry may be served stale :data:`STALE_COVER` past its freshness."""
        return self.stale_until - self.fresh_until >= STALE_COVER

    def refresh_at(self, refresh_ahead: float) -> float:
        """When the entry is refreshed (:func:`lead` before it goes stale)."""
        return self.fresh_until - lead(self.lifetime, refresh_ahead)


@dataclass(frozen=True, slots=True)
class Due:
    """What :meth:`ReadTracker.due` handed out: ``keys`` to refresh now, most requested
    first, and when the next read may come due (None: none will without another read or
    renewal)."""

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


def retry_after(read: Read, refresh_ahead: float) -> float:
    """Seconds a read handed out for a refresh is claimed: its lead, at least
    :data:`MIN_RETRY` (a refresh that did not renew its entry is tried again then)."""
    return max(MIN_RETRY, lead(read.lifetime, refresh_ahead))


class ReadTracker:
    """The entries visitors read, bounded, and their refresh schedule (see the module)."""

    __slots__ = ("_held", "_reads", "_ready", "_schedule", "_seq", "max_entries",
                 "refresh_ahead", "refreshes", "window")

    def __init__(self, max_entries: int, window: float, refresh_ahead: float) -> None:
        if max_entries < 1:
            raise ValueError(f"a read tracker needs max_entries of at least 1, got {max_entries}")
        self.max_entries = max_entries
        self.window = window
        self.refresh_ahead = refresh_ahead
        self._reads: dict[str, Read] = {}
        self._schedule: list[tuple[float, int, str]] = []
        """``(refresh time, sequence, key)``, a heap; an item whose time is no longer its
        read's ``due_at`` (rescheduled, or the read dropped) is skipped when it surfaces."""
        self._seq = 0
        self._ready: dict[str, Read] = {}
        """The reads come due and not handed out yet (more than one call's ``limit``)."""
        self._held: dict[str, Read] = {}
        """Covered reads come due that a ``covered=False`` call left waiting."""
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
            self._renew(key, read, entry)

    def expired(self, now: float, limit: int) -> tuple[int, list[str]]:
        """The reads a visitor made within ``window`` of ``now`` whose entry is no longer
        fresh and was not renewed since (refresh ahead has not got to it, or gave up on
        it): their next visitor waits for the origin, or gets a stale copy.  Counted, with
        the URLs of the ``limit`` most requested.  Its cost is the table's (at most
        ``max_entries`` reads), so it is for the admin side's status, not the hit path."""
        since = now - self.window
        stale = [read for read in self._reads.values()
                 if read.fresh_until <= now and read.last_read >= since]
        return len(stale), [read.url for read in
                            heapq.nlargest(limit, stale, key=lambda read: read.count)]

    def renewed(self, entry: CacheEntry) -> None:
        """A fetch stored ``entry`` (a refresh, a warm visit, a revalidation)."""
        key = read_key(entry)
        read = self._reads.get(key)
        if read is not None and entry.fresh_until > read.fresh_until:
            self._renew(key, read, entry)

    def due(self, now: float, *, limit: int, covered: bool = True) -> Due:
        """The due reads (see the module invariants), claimed, and when the next comes due;
        with ``covered`` False, covered reads wait."""
        since = now - self.window
        ready, held, schedule = self._ready, self._held, self._schedule
        while schedule and schedule[0][0] <= now:
            at, _, key = heapq.heappop(schedule)
            read = self._reads.get(key)
            if read is not None and read.due_at == at:
                ready[key] = read
        if covered and held:
            ready.update(held)
            held.clear()
        for key, read in list(ready.items()):
            if self._reads.get(key) is not read or not 0 <= read.due_at <= now:
                del ready[key]  # dropped, or renewed since: scheduled anew
            elif read.last_read < since:
                del ready[key]
                self._forget(key)
            elif not covered and read.covered:
                held[key] = ready.pop(key)
        picked = heapq.nlargest(limit, ready.items(), key=lambda item: item[1].count)
        for key, read in picked:
            del ready[key]
            read.not_before = now + retry_after(read, self.refresh_ahead)
            self._plan(key, read)
        next_at = now if ready else (schedule[0][0] if schedule else None)
        return Due([key for key, _ in picked], next_at)

    def _renew(self, key: str, read: Read, entry: CacheEntry) -> None:
        read.fresh_until = entry.fresh_until
        read.stale_until = entry.stale_until
        read.response_time = entry.response_time
        read.not_before = 0.0
        self._plan(key, read)

    def _plan(self, key: str, read: Read) -> None:
        """Schedule ``read``'s refresh (none for a lifetime under :data:`MIN_LIFETIME`)."""
        if read.lifetime < MIN_LIFETIME:
            read.due_at = -1.0
            return
        read.due_at = max(read.refresh_at(self.refresh_ahead), read.not_before)
        self._push(read.due_at, key)

    def _push(self, at: float, key: str) -> None:
        self._seq += 1
        heapq.heappush(self._schedule, (at, self._seq, key))

    def _add(self, key: str, entry: CacheEntry, headers: Sequence[Header], now: float) -> None:
        picked = vary_headers(entry.vary, headers) if entry.vary else ()
        if picked is None:
            return
        if len(self._reads) >= self.max_entries:
            self._evict(now)
        read = self._reads[key] = Read(entry.url, picked, entry, now)
        self._plan(key, read)

    def _forget(self, key: str) -> None:
        del self._reads[key]
        self._held.pop(key, None)

    def _evict(self, now: float) -> None:
        """Drop the quarter (at least one) least deserving a refresh (their schedule items
        are skipped when they surface; the heap is rebuilt once they outnumber the reads)."""
        since = now - self.window
        victims = heapq.nsmallest(
            max(1, self.max_entries // 4), self._reads.items(),
            key=lambda item: (item[1].last_read >= since, item[1].count, item[1].last_read))
        for key, _ in victims:
            self._forget(key)
        if len(self._schedule) > 2 * len(self._reads) + 64:
            self._schedule = [item for item in self._schedule
                              if (read := self._reads.get(item[2])) is not None
                              and read.due_at == item[0]]
            heapq.heapify(self._schedule)

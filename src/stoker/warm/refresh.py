"""Refresh ahead: the loop that revalidates the entries visitors read before they go stale.

Each tick takes from the pipeline's :class:`~stoker.cache.reads.ReadTracker` the reads
due (:meth:`~stoker.cache.reads.ReadTracker.due`: refresh time come, read by a visitor
within ``refresh_window``, most requested first, at most :data:`BATCH`, each claimed
while it is refreshed) and runs one refresh visit each through the warmer
(:meth:`~stoker.warm.warmer.Warmer.refresh`: the warmer's adaptive throttle and the
origin's visitors-first limit; a conditional GET with the entry's validators, a plain
GET without).

Invariants:
- A refresh that renews its entry releases its claim (the pipeline tells the tracker);
  one that does not (the origin failed, the page was not stored) is due again when its
  claim ends (:func:`~stoker.cache.reads.retry_after`) while visitors keep reading it.
- While a warm run is going (``filling`` says so), covered reads wait
  (:meth:`~stoker.cache.reads.ReadTracker.due` with ``covered=False``): a visitor gets
  them at once from their stale copy, while a page the run has not reached yet would
  make one wait, so the run's visits come first.  A ``filling`` that fails counts as no
  run (every due read is refreshed).
- A tick waits for its visits before the next one starts: the refreshes never outrun
  what the throttle lets through.  The next tick comes when the next read is due, at
  least :data:`MIN_TICK` and at most :data:`MAX_TICK` later (:data:`MIN_TICK` after a tick
  that refreshed something).
- A refresh visit sends the headers that select the read's variant, and the warmer's
  ``User-Agent`` unless those name one (:func:`visit_headers`).
- Every refresh is counted by result in the tracker's ``refreshes`` (``refreshed``: a new
  response stored, ``not_modified``: a 304 renewed it, ``failed``: anything else).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from stoker.cache.reads import Read, ReadTracker
from stoker.clock import Clock
from stoker.warm.visits import VisitResult

log = logging.getLogger("stoker.warm")

BATCH: Final = 256
"""Reads refreshed per tick at most (a tick waits for them all)."""
MIN_TICK: Final = 0.1
MAX_TICK: Final = 1.0
RESULTS: Final = {"warmed": "refreshed", "not_modified": "not_modified"}
"""Visit outcomes as refresh results (anything else is ``failed``)."""

Header = tuple[bytes, bytes]
RefreshVisit = Callable[[str, tuple[Header, ...]], Awaitable[VisitResult]]
"""One refresh visit of a URL with the headers that select its variant."""
Filling = Callable[[], Awaitable[bool]]
"""Whether a warm run is filling the cache now."""


def visit_headers(headers: tuple[Header, ...], user_agent: bytes) -> tuple[Header, ...]:
    """The headers of a refresh visit for a read with ``headers``.  Pure."""
    if any(name.lower() == b"user-agent" for name, _ in headers):
        return headers
    return ((b"user-agent", user_agent), *headers)


def next_tick(next_at: float | None, now: float) -> float:
    """Seconds to the next tick when the next read is due at ``next_at``.  Pure."""
    if next_at is None:
        return MAX_TICK
    return min(MAX_TICK, max(MIN_TICK, next_at - now))


class Refresher:
    """Refreshes the entries visitors read ahead of their expiry (see the module)."""

    def __init__(self, reads: ReadTracker, visit: RefreshVisit, clock: Clock, *,
                 user_agent: bytes, filling: Filling | None = None) -> None:
        self.reads = reads
        self._visit = visit
        self._clock = clock
        self._user_agent = user_agent
        self._filling = filling

    async def tick(self) -> float:
        """Refresh what is due now; seconds until the next tick."""
        covered = not await self._run_going()
        now = self._clock.now()
        picked = self.reads.due(now, limit=BATCH, covered=covered)
        reads = [read for read in map(self.reads.get, picked.keys) if read is not None]
        if not reads:
            return next_tick(picked.next_at, now)
        await asyncio.gather(*(self._refresh(read) for read in reads))
        return MIN_TICK  # the next tick finds what came due meanwhile

    async def run(self, stop: asyncio.Event) -> None:
        """Tick until ``stop``."""
        while not stop.is_set():
            try:
                wait = await self.tick()
            except Exception:
                log.exception("refresh ahead: a tick failed")
                wait = MAX_TICK
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)

    async def _run_going(self) -> bool:
        if self._filling is None:
            return False
        try:
            return await self._filling()
        except Exception:
            log.warning("refresh ahead: could not tell whether a warm run is going; "
                        "refreshing every due read", exc_info=True)
            return False

    async def _refresh(self, read: Read) -> None:
        try:
            result = await self._visit(read.url, visit_headers(read.headers, self._user_agent))
        except Exception:
            log.exception("refresh ahead: refreshing %s failed", read.url)
            self.reads.refreshes["failed"] += 1
            return
        outcome = RESULTS.get(result.outcome, "failed")
        self.reads.refreshes[outcome] += 1
        if outcome == "failed":
            log.info("refresh ahead: %s not refreshed (%s %s)", read.url, result.outcome,
                     result.detail or result.status)

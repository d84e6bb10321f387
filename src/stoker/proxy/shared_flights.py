"""Collapsing across the processes (or nodes) sharing one persistent tier.

Within a process concurrent misses of a key already wait on one fetch
(:class:`~stoker.cache.collapse.Collapser`).  With :class:`SharedFlights`, that fetch's
leader first takes the key's fetch lease (:mod:`stoker.cache.fetch_leases`): taken, it
fetches as alone, renewing the lease every third of ``node_timeout`` while it does, and
gives it back once its entry is in the shared tier; held by another member, it waits for
that member's entry to reach the shared tier (read every :data:`POLL` seconds) and serves
it, so N processes' misses of a key make one origin request.

Invariants:
- A lease is live only while its holder renews it (the liveness rule of
  :mod:`stoker.cache.fetch_leases`); a holder renews until its entry has reached the
  shared tier (or :meth:`SharedFlights.release` stops waiting for it), and stops for
  good once a renewal finds the lease lost.
- A waiter that finds the lease dead (its holder stopped renewing: killed, cut off) takes
  it over: of the waiting members exactly one does and fetches, the others wait on it;
  each new fetch so begun is told to the waiter's caller (``began``), and its wait on it
  starts again (at most the collapse timeout per fetch).  So a holder killed mid-fetch
  costs its waiters at most ``node_timeout`` (and a poll) plus one origin fetch, and one
  origin request besides the killed holder's.
- A waiter stops waiting (and fetches itself, holding no lease) when the lease has been
  given back :data:`GRACE` seconds without a usable entry appearing (the holder's answer
  was not stored, or not for this request), or after the collapse timeout on one fetch.
- A lease store that fails is logged and never keeps a request from fetching; failing
  renewals are said in one line, then one per :data:`~stoker.resilience.outage.SAY_EVERY`
  while they keep failing (the lease dies meanwhile, and a waiter may fetch too).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Final

from stoker.cache.entry import CacheEntry
from stoker.cache.fetch_leases import (
    FetchLeases,
    Holder,
    Lease,
    judge,
    lease_until,
    new_holder,
    renew_every,
)
from stoker.cache.port import Cache
from stoker.clock import Clock
from stoker.resilience import outage

log = logging.getLogger("stoker.cache")

POLL: Final = 0.01
"""Seconds between two reads of the shared tier by a waiter."""
GRACE: Final = 0.5
"""Seconds a waiter keeps looking once the lease is given back (the entry's write may be
on its way)."""


class SharedFlights:
    """One process's side of the fetch leases (see the module invariants)."""

    def __init__(self, leases: FetchLeases, store: Cache, clock: Clock, owner: str,
                 timeout: float, node_timeout: float) -> None:
        self._leases = leases
        self._store = store
        self._clock = clock
        self._owner = owner
        self._timeout = timeout
        self._node_timeout = node_timeout
        self._renewals: dict[str, asyncio.Task[None]] = {}
        self._renewing = outage.Outage()

    async def take(self, key: str) -> bool:
        """Take ``key``'s lease (and renew it until :meth:`release`); False when another
        member holds it live (True, holding none, when the lease store fails: fetch as
        if alone)."""
        now = self._clock.now()
        try:
            taken = await self._leases.take(key, self._owner,
                                            lease_until(now, self._node_timeout), now)
        except Exception:
            log.warning("taking a fetch lease failed; fetching as if alone", exc_info=True)
            return True
        if taken:
            self._renewals[key] = asyncio.create_task(self._renew(key))
        return taken

    def holds(self, key: str) -> bool:
        """Whether this process holds ``key``'s lease now."""
        return key in self._renewals

    async def wait(self, key: str, usable: Callable[[list[CacheEntry]], CacheEntry | None],
                   began: Callable[[], None]) -> CacheEntry | None:
        """The entry the lease's holder stores under ``key``, once ``usable`` takes one of
        those the shared tier holds; None when this process is to fetch, holding the
        lease if it took over a dead one (:meth:`holds`).  ``began`` is called when a
        new fetch of ``key`` begins: this process's, or another waiter's that took the
        lease over (see the module invariants)."""
        deadline = self._clock.monotonic() + self._timeout
        seen: Holder | None = None
        given_back: float | None = None
        try:
            while self._clock.monotonic() < deadline:
                await self._clock.sleep(POLL)
                found = usable(await self._store.get(key))
                if found is not None:
                    return found
                holder = await self._leases.holder(key)
                lease = judge(holder, self._clock.now())
                if lease is Lease.DEAD and await self.take(key):
                    began()
                    return None
                if lease is Lease.LIVE and new_holder(seen, holder):
                    began()
                    deadline = self._clock.monotonic() + self._timeout
                seen = holder if lease is Lease.LIVE else seen
                if lease is not Lease.FREE:
                    given_back = None
                elif given_back is None:
                    given_back = self._clock.monotonic()
                elif self._clock.monotonic() - given_back >= GRACE:
                    return None
        except Exception:
            log.warning("waiting on another process's fetch failed; fetching", exc_info=True)
        return None

    async def release(self, key: str) -> None:
        """Give ``key``'s lease back once what this process stored under it has reached
        the shared tier (so a member that takes the lease next finds it there), renewing
        it until then; a failure is logged: the lease dies."""
        renewal = self._renewals.pop(key, None)
        try:
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._store.written(key), self._timeout)
            finally:
                if renewal is not None:
                    renewal.cancel()
            await self._leases.release(key, self._owner)
        except Exception:
            log.warning("giving a fetch lease back failed; it dies", exc_info=True)

    async def _renew(self, key: str) -> None:
        """Renew ``key``'s lease every third of ``node_timeout`` until cancelled or lost."""
        while True:
            await self._clock.sleep(renew_every(self._node_timeout))
            now = self._clock.now()
            try:
                kept = await self._leases.renew(key, self._owner,
                                                lease_until(now, self._node_timeout), now)
            except Exception as error:
                self._renewing, say = outage.failed(self._renewing, self._clock.monotonic())
                if say:
                    log.warning("renewing fetch leases failed (%d time(s) in a row: %s); "
                                "a lease not renewed for node_timeout (%g s) dies and a "
                                "waiting member fetches too", self._renewing.failures,
                                error, self._node_timeout)
                continue
            self._renewing, back = outage.answered(self._renewing)
            if back:
                log.warning("renewing fetch leases works again")
            if not kept:
                log.warning("the fetch lease on %s was lost (not renewed within "
                            "node_timeout, %g s): another member fetches it too", key,
                            self._node_timeout)
                return

    async def close(self) -> None:
        """Stop renewing the leases held (the leases' store is its opener's to close)."""
        for renewal in self._renewals.values():
            renewal.cancel()
        self._renewals.clear()

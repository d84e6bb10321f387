"""Collapsing across the processes (or nodes) sharing one persistent tier.

Within a process concurrent misses of a key already wait on one fetch
(:class:`~stoker.cache.collapse.Collapser`).  With :class:`SharedFlights`, that fetch's
leader first takes the key's fetch lease (:mod:`stoker.cache.fetch_leases`): taken, it
fetches as alone and gives the lease back once its entry is in the shared tier; held by another
member, it waits for that member's entry to reach the shared tier (read every
:data:`POLL` seconds) and serves it, so N processes' misses of a key make one origin
request.

Invariants: a waiter stops waiting (and fetches itself) when the lease has been gone
:data:`GRACE` seconds without a usable entry appearing (the other member's answer was
not stored, or its write is lost), or after the collapse timeout; a lease store that
fails is logged and never keeps a request from fetching; a lease is taken until the
collapse timeout, so one whose owner died expires.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Final

from stoker.cache.entry import CacheEntry
from stoker.cache.fetch_leases import FetchLeases
from stoker.cache.port import Cache
from stoker.clock import Clock

log = logging.getLogger("stoker.cache")

POLL: Final = 0.01
"""Seconds between two reads of the shared tier by a waiter."""
GRACE: Final = 0.5
"""Seconds a waiter keeps looking once the lease is gone (the entry's write may be on
its way)."""


class SharedFlights:
    """One process's side of the fetch leases (see the module invariants)."""

    def __init__(self, leases: FetchLeases, store: Cache, clock: Clock, owner: str,
                 timeout: float) -> None:
        self._leases = leases
        self._store = store
        self._clock = clock
        self._owner = owner
        self._timeout = timeout
        self._held: set[str] = set()

    async def take(self, key: str) -> bool:
        """Take ``key``'s lease; False when another member holds it (True, holding none,
        when the lease store fails: fetch as if alone)."""
        now = self._clock.now()
        try:
            taken = await self._leases.take(key, self._owner, now + self._timeout, now)
        except Exception:
            log.warning("taking a fetch lease failed; fetching as if alone", exc_info=True)
            return True
        if taken:
            self._held.add(key)
        return taken

    def holds(self, key: str) -> bool:
        """Whether this process holds ``key``'s lease now."""
        return key in self._held

    async def wait(self, key: str,
                   usable: Callable[[list[CacheEntry]], CacheEntry | None]) -> CacheEntry | None:
        """The entry the lease's holder stores under ``key``, once ``usable`` takes one of
        those the shared tier holds; None when it gave up (see the module invariants)."""
        deadline = self._clock.monotonic() + self._timeout
        gone_since: float | None = None
        try:
            while self._clock.monotonic() < deadline:
                await self._clock.sleep(POLL)
                found = usable(await self._store.get(key))
                if found is not None:
                    return found
                if gone_since is None and not await self._leases.held(key, self._clock.now()):
                    gone_since = self._clock.monotonic()
                if gone_since is not None and self._clock.monotonic() - gone_since >= GRACE:
                    return None
        except Exception:
            log.warning("waiting on another process's fetch failed; fetching", exc_info=True)
        return None

    async def release(self, key: str) -> None:
        """Give ``key``'s lease back once what this process stored under it has reached
        the shared tier (so a member that takes the lease next finds it there); a failure
        is logged: the lease expires."""
        self._held.discard(key)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._store.written(key), self._timeout)
            await self._leases.release(key, self._owner)
        except Exception:
            log.warning("giving a fetch lease back failed; it expires", exc_info=True)

    async def close(self) -> None:
        await self._leases.close()

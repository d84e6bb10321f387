"""Request collapsing: one origin fetch per key at a time, others wait and share.

Invariants:
- At most one :class:`Flight` per key exists; the caller that created it (the
  leader) must :meth:`Collapser.land` it exactly once, in ``finally``.
- A flight lands with the stored entry (followers serve it) or ``None``
  (not shareable — private, uncacheable or failed: followers go to the
  origin themselves, so no private response is ever shared).
- A follower waits at most its timeout and then treats the flight as ``None``.
"""

from __future__ import annotations

import asyncio

from stoker.cache.entry import CacheEntry


class Flight:
    """One in-progress origin fetch that others may wait on."""

    __slots__ = ("_future", "stored")

    def __init__(self) -> None:
        self._future: asyncio.Future[CacheEntry | None] = (
            asyncio.get_running_loop().create_future()
        )
        self.stored = False
        """The shared entry is the response this flight fetched and stored (not an older
        copy served because the origin failed): a follower's ``Cache-Status`` says
        ``stored`` as the leader's does."""

    def share(self, entry: CacheEntry | None, *, stored: bool = False) -> None:
        """Release the followers with ``entry``, which this flight stored if ``stored``
        (idempotent; the first call wins)."""
        if not self._future.done():
            self.stored = stored and entry is not None
            self._future.set_result(entry)

    async def wait(self, timeout: float) -> CacheEntry | None:
        """The shared entry, or ``None`` if not shareable or not landed within ``timeout``."""
        try:
            return await asyncio.wait_for(asyncio.shield(self._future), timeout)
        except TimeoutError:
            return None


class Collapser:
    """The table of flights in progress, by key."""

    def __init__(self) -> None:
        self._flights: dict[str, Flight] = {}

    def join(self, key: str) -> tuple[Flight, bool]:
        """The flight for ``key`` and whether the caller is its leader."""
        flight = self._flights.get(key)
        if flight is not None:
            return flight, False
        flight = Flight()
        self._flights[key] = flight
        return flight, True

    def busy(self, key: str) -> bool:
        """True while a flight for ``key`` is in progress."""
        return key in self._flights

    def land(self, key: str, flight: Flight, entry: CacheEntry | None) -> None:
        """End the leader's flight: share ``entry`` (if not already) and forget it."""
        flight.share(entry)
        if self._flights.get(key) is flight:
            del self._flights[key]

    def __len__(self) -> int:
        return len(self._flights)

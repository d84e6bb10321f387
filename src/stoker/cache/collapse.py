"""Request collapsing: one origin fetch per key at a time, others wait and share.

Invariants:
- At most one :class:`Flight` per key exists; the caller that created it (the
  leader) must :meth:`Collapser.land` it exactly once, in ``finally``.
- A flight lands with the stored entry (followers serve it) or ``None``
  (not shareable — private, uncacheable or failed: followers go to the
  origin themselves, so no private response is ever shared).
- A flight led by a request with credentials (``Authorization``) hands its answer to
  no one unless the answer says it is for everyone
  (:func:`~stoker.http.policy.shared_beyond_credentials`); otherwise it is
  ``withheld``, and its followers collapse among themselves on a new flight.
- What a follower is handed is an offer: it takes it only if it could reuse it from
  the cache itself (the pipeline checks, :func:`~stoker.proxy.decide.may_take`).
- A follower waits at most its timeout on one fetch and then treats the flight as
  ``None``: the timeout counts from when it joined or from the flight's last
  :meth:`Flight.began` (its leader, waiting on another member's fetch lease, saw a new
  fetch begin: its own after taking over a dead member's lease, or another waiter's),
  whichever is later.
- A flight may land with its leader's exception instead (``error``; the function cache's
  flights, :mod:`stoker.functions`: a failed call reaches every caller that waited for
  it); its followers are handed ``None`` and read the exception from the flight.  The
  proxy's flights never land with one (a failed fetch is ``None``: followers fetch).
- A flight that has shared its answer no longer takes followers: a request arriving
  then leads a new flight (and finds a stored answer in the cache).
"""

from __future__ import annotations

import asyncio

from stoker.cache.entry import CacheEntry
from stoker.http.policy import shared_beyond_credentials


class Flight:
    """One in-progress origin fetch that others may wait on."""

    __slots__ = ("_began", "_future", "credentialed", "error", "fell_back", "followers",
                 "stored", "withheld")

    def __init__(self, *, credentialed: bool = False) -> None:
        self._future: asyncio.Future[CacheEntry | None] = (
            asyncio.get_running_loop().create_future()
        )
        self._began = float("-inf")
        self.credentialed = credentialed
        """The leader's request carries credentials (``Authorization``)."""
        self.stored = False
        """The shared entry is the response this flight fetched and stored (not an older
        copy served because the origin failed): a follower's ``Cache-Status`` says
        ``stored`` as the leader's does."""
        self.fell_back = False
        """The shared entry is a stale copy answering in place of a failed origin."""
        self.withheld = False
        """A credentialed leader's answer, or its lack, says nothing about what others
        would get: followers fetch anew, on a flight of their own."""
        self.followers = 0
        """Requests that joined this flight after its leader."""
        self.error: BaseException | None = None
        """The exception the leader's call raised, when it landed with one (see the module
        invariants)."""

    def share(self, entry: CacheEntry | None, *, stored: bool = False,
              fell_back: bool = False) -> None:
        """Release the followers with ``entry``, which this flight stored if ``stored``,
        or which stands in for a failed origin if ``fell_back`` (idempotent; the first
        call wins).  A credentialed flight withholds an answer not meant for everyone."""
        if self._future.done():
            return
        if self.credentialed and (entry is None or not shared_beyond_credentials(
                entry.headers)):
            entry, self.withheld = None, True
        self.stored = stored and entry is not None
        self.fell_back = fell_back and entry is not None
        self._future.set_result(entry)

    def done(self) -> bool:
        """Whether the followers have been released."""
        return self._future.done()

    def began(self) -> None:
        """A new fetch for this flight began: its followers' timeouts count from now."""
        self._began = asyncio.get_running_loop().time()

    async def wait(self, timeout: float) -> CacheEntry | None:
        """The shared entry, or ``None`` if not shareable or not landed within ``timeout``
        of joining or of the last :meth:`began`, whichever is later."""
        loop = asyncio.get_running_loop()
        joined = loop.time()
        while True:
            left = max(joined, self._began) + timeout - loop.time()
            if left <= 0 and not self._future.done():
                return None
            try:
                return await asyncio.wait_for(asyncio.shield(self._future), max(left, 0))
            except TimeoutError:
                continue


class Collapser:
    """The table of flights in progress, by key."""

    def __init__(self) -> None:
        self._flights: dict[str, Flight] = {}

    def join(self, key: str, *, credentialed: bool = False) -> tuple[Flight, bool]:
        """The flight for ``key`` and whether the caller is its leader (a new flight, led
        by a request with credentials if ``credentialed``, when none is in progress or
        the one in progress has already shared its answer)."""
        flight = self._flights.get(key)
        if flight is not None and not flight.done():
            flight.followers += 1
            return flight, False
        flight = Flight(credentialed=credentialed)
        self._flights[key] = flight
        return flight, True

    def busy(self, key: str) -> bool:
        """True while a flight for ``key`` is in progress."""
        return key in self._flights

    def land(self, key: str, flight: Flight, entry: CacheEntry | None, *,
             fell_back: bool = False, error: BaseException | None = None) -> None:
        """End the leader's flight: share ``entry`` (if not already; with ``error``, none
        and the leader's exception) and forget it."""
        if error is not None and not flight.done():
            flight.error = error
        flight.share(entry if error is None else None, fell_back=fell_back)
        if self._flights.get(key) is flight:
            del self._flights[key]

    def followers(self) -> int:
        """Requests waiting on (or answered by) the flights still in progress."""
        return sum(flight.followers for flight in self._flights.values())

    def __len__(self) -> int:
        return len(self._flights)

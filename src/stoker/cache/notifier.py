"""The notifier: how the members of one cache hear *sooner* that the purge bus changed.

The :class:`~stoker.purge.bus.PurgeBus` stays the durable, numbered truth; a poke
carries nothing but its kind: ``"published"`` (something new is on the bus: read it) or
``"confirmed"`` (a member confirmed a number: a purge waiting for the others may be
answered).  A member that misses a poke loses no purge, only time: it still reads the
bus at its fallback poll, where a gap in the numbers, or a bus unreachable for longer
than ``node_timeout``, drops its memory tier as before (:mod:`stoker.purge.relay`).

Implementations: :class:`LocalNotifier` (pokes wake the waiters of this process only:
the default, with nothing cross-process configured), and, on the reconnecting
:class:`~stoker.cache.subscription.Subscription`, PostgreSQL LISTEN/NOTIFY and Redis
pub/sub (``backends``).  Each rings a :class:`Doorbell`, which every waiter shares.

Invariants (every implementation): a poke reaches every member subscribed to the same
channel, *this one included* (through the channel, as the others hear it); a bell's
count of rings only grows, and a waiter wakes for any ring of its kind after the count
it started from (so a poke arriving between a look at the bus and the wait is not
missed); :meth:`Notifier.wait` returns ``False`` once ``timeout`` has passed on the
injected clock, connected or not; :meth:`Notifier.poke` never raises for a lost
connection (logged; the members read the bus at their fallback poll); when a
subscription is lost every bell rings (a waiter chooses its timeout again: ``connected``
changed), and again once it is back, since what was poked meanwhile went unheard.
"""

from __future__ import annotations

import asyncio
from typing import Final, Literal, Protocol

from stoker.clock import Clock

Kind = Literal["published", "confirmed"]
KINDS: Final[tuple[Kind, ...]] = ("published", "confirmed")


class Notifier(Protocol):
    """Pokes between the members of one cache (see the module invariants)."""

    reaches_others: bool
    """Whether a poke crosses to other processes (``False``: :class:`LocalNotifier`)."""
    reconnects: int
    """Lost subscriptions made again since this notifier opened."""

    @property
    def connected(self) -> bool:
        """``False`` only while a cross-process notifier has lost its subscription."""

    def rung(self, what: Kind) -> int:
        """How many rings of ``what`` this member has heard so far."""

    async def poke(self, what: Kind) -> None:
        """Tell every member, this one included, that ``what`` happened."""

    async def wait(self, what: Kind, timeout: float, after: int | None = None) -> bool:
        """Until a ring of ``what`` beyond ``after`` rings (default: the count now):
        ``True``; or ``timeout`` seconds: ``False``."""

    async def close(self) -> None: ...


class Doorbell:
    """A bell per kind: a count of rings and one event per count, which every waiter
    shares (a ring sets it and hangs a new one), on ``clock`` for the timeouts."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._rung = dict.fromkeys(KINDS, 0)
        self._next = {kind: asyncio.Event() for kind in KINDS}

    def rung(self, what: Kind) -> int:
        return self._rung[what]

    def ring(self, what: Kind) -> None:
        """Wake every waiter of ``what``."""
        self._rung[what] += 1
        event, self._next[what] = self._next[what], asyncio.Event()
        event.set()

    def ring_all(self) -> None:
        for kind in KINDS:
            self.ring(kind)

    async def wait(self, what: Kind, timeout: float, after: int | None = None) -> bool:
        """See :meth:`Notifier.wait`."""
        start = self._rung[what] if after is None else after
        if self._rung[what] > start:
            return True
        timer = asyncio.ensure_future(self._clock.sleep(timeout))
        try:
            while self._rung[what] <= start and not timer.done():
                ringing = asyncio.ensure_future(self._next[what].wait())
                try:
                    await asyncio.wait([ringing, timer], return_when=asyncio.FIRST_COMPLETED)
                finally:
                    ringing.cancel()
        finally:
            timer.cancel()
        return self._rung[what] > start


class LocalNotifier:
    """Pokes that wake the waiters of this process only (nothing cross-process is
    configured: the others hear of the bus at their polls)."""

    reaches_others = False
    reconnects = 0
    connected = True

    def __init__(self, clock: Clock) -> None:
        self._bell = Doorbell(clock)

    def rung(self, what: Kind) -> int:
        return self._bell.rung(what)

    async def poke(self, what: Kind) -> None:
        self._bell.ring(what)

    async def wait(self, what: Kind, timeout: float, after: int | None = None) -> bool:
        return await self._bell.wait(what, timeout, after)

    async def close(self) -> None:
        """Nothing to release."""

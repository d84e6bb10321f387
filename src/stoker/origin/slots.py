"""One origin concurrency limit shared by visitors' misses and warm visits, visitors first,
and among visitors fairly by client.

``OriginLimiter(max_concurrency, reserve_for_visitors, per_client)`` hands out at most
``max_concurrency`` slots (``origin_max_concurrency``). A visitor's miss holds one for
its origin request (``async with limiter.visitor(claim):``, the claim naming its client
and URL, :mod:`stoker.origin.fair_share`), a warm visit holds one for its own (``async
with limiter.warm(max_now):``, ``max_now`` being the warm throttle's current
``allowed``).

Invariants (one event loop; every wait is FIFO within its kind, and within a client):
- at most ``max_concurrency`` slots are held at any time;
- a client holds at most ``per_client`` slots (``origin_max_per_client``) *within its
  share*; it may borrow more only as a warm visit would, while more than
  ``reserve_for_visitors`` slots stay free after it and no warm visit that may start
  waits, so however many slow requests one client sends, the last
  ``reserve_for_visitors`` slots stay free for the others;
- a visitor within its share takes a free slot at once: it waits only while every slot
  is held (never for a warm visit or a borrower while a slot is free); a freed slot goes
  first to a waiting visitor within its share, the client holding fewest slots first
  (:meth:`FairShare.grant`: round robin across clients, a URL already holding slots
  behind the others), then to warm visits, then to borrowers;
- a warm visit starts only while fewer than ``max_now`` warm visits hold slots and more
  than ``reserve_for_visitors`` slots would stay free after it starts (so warm visits
  never take the last ``reserve`` slots, and never start while a visitor within its
  share waits, since then no slot is free); otherwise it waits, behind the warm visits
  queued before it;
- a slot is handed straight to the waiter it wakes, so a waiter cancelled after
  being granted gives its slot back, and one cancelled while waiting leaves the
  queue without a trace.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from stoker.origin.fair_share import ANONYMOUS, Claim, FairShare


@dataclass(frozen=True, slots=True)
class LimiterStats:
    """A snapshot for metrics and tests."""

    in_use: int
    warm_in_use: int
    visitors_waiting: int
    warm_waiting: int


@dataclass(eq=False, slots=True)
class _Waiter:
    """A queued request for a slot; ``max_now`` caps warm visits in flight (warm only)."""

    future: asyncio.Future[None]
    max_now: int


def default_reserve(max_concurrency: int) -> int:
    """Slots kept for visitors when not told otherwise: a quarter, at least one."""
    return max(1, max_concurrency // 4)


def default_per_client(max_concurrency: int) -> int:
    """One client's share when not told otherwise: a quarter, at least one."""
    return max(1, max_concurrency // 4)


class OriginLimiter:
    """Visitors-first origin concurrency limit, fair among clients (see the module
    docstring)."""

    def __init__(self, max_concurrency: int, reserve_for_visitors: int | None = None,
                 per_client: int | None = None) -> None:
        reserve = (default_reserve(max_concurrency) if reserve_for_visitors is None
                   else reserve_for_visitors)
        if not 0 <= reserve < max_concurrency:
            raise ValueError(
                f"origin_max_concurrency ({max_concurrency}) must leave warm visits at least "
                f"one slot beyond the {reserve} reserved for visitors (set it to at least "
                f"{reserve + 1})")
        self._max = max_concurrency
        self._warm_cap = max_concurrency - reserve
        self._in_use = 0
        self._warm_in_use = 0
        self._visitors: FairShare[_Waiter] = FairShare(
            default_per_client(max_concurrency) if per_client is None else per_client)
        self._warm: deque[_Waiter] = deque()

    @property
    def max_concurrency(self) -> int:
        return self._max

    @property
    def reserve_for_visitors(self) -> int:
        return self._max - self._warm_cap

    @property
    def per_client(self) -> int:
        return self._visitors.per_client

    def holding(self, client: str) -> int:
        """Slots ``client``'s requests hold now."""
        return self._visitors.holding(client)

    def stats(self) -> LimiterStats:
        """Slots held and waiters queued, now."""
        return LimiterStats(self._in_use, self._warm_in_use, self._visitors.waiting(),
                            len(self._warm))

    @asynccontextmanager
    async def visitor(self, claim: Claim = ANONYMOUS) -> AsyncIterator[None]:
        """Hold one slot for a visitor's origin request for ``claim``."""
        waiter = _Waiter(asyncio.get_running_loop().create_future(), 0)
        self._visitors.enqueue(waiter, claim)
        self._dispatch()
        try:
            await waiter.future  # returns at once when already granted
        except asyncio.CancelledError:
            if not waiter.future.cancelled():
                self._release_visitor(claim)  # granted, then cancelled before it resumed
            elif self._visitors.withdraw(waiter, claim):
                self._dispatch()  # it may have held up the waiters behind it
            raise
        try:
            yield
        finally:
            self._release_visitor(claim)

    @asynccontextmanager
    async def warm(self, max_now: int) -> AsyncIterator[None]:
        """Hold one slot for a warm visit, with at most ``max_now`` warm visits in flight."""
        if max_now < 1:
            raise ValueError(
                f"a warm visit needs max_now of at least 1, got {max_now} "
                "(wait out the throttle's Retry-After before asking for a slot)")
        if not self._warm and self._warm_may_start(max_now):
            self._in_use += 1
            self._warm_in_use += 1
        else:
            await self._wait_warm(max_now)
        try:
            yield
        finally:
            self._in_use -= 1
            self._warm_in_use -= 1
            self._dispatch()

    def _warm_may_start(self, max_now: int) -> bool:
        return self._warm_in_use < max_now and self._in_use < self._warm_cap

    async def _wait_warm(self, max_now: int) -> None:
        """Queue, and return once :meth:`_dispatch` has handed this warm visit a slot."""
        waiter = _Waiter(asyncio.get_running_loop().create_future(), max_now)
        self._warm.append(waiter)
        try:
            await waiter.future
        except asyncio.CancelledError:
            if not waiter.future.cancelled():  # granted, then cancelled before it resumed
                self._in_use -= 1
                self._warm_in_use -= 1
                self._dispatch()
            elif waiter in self._warm:
                self._warm.remove(waiter)
                self._dispatch()  # it may have held up the waiters behind it
            raise

    def _release_visitor(self, claim: Claim) -> None:
        self._in_use -= 1
        self._visitors.release(claim)
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand free slots to queued visitors within their share, then to warm visits,
        then to visitors beyond their share (neither of those two into the reserve).

        A waiter cancelled but not yet resumed is still queued with a done future:
        it is dropped here, not granted.
        """
        self._grant_visitors(self._max, beyond_cap=False)
        while self._warm and self._warm_may_start(self._warm[0].max_now):
            waiter = self._warm.popleft()
            if not waiter.future.done():
                self._in_use += 1
                self._warm_in_use += 1
                waiter.future.set_result(None)
        self._grant_visitors(self._warm_cap, beyond_cap=True)

    def _grant_visitors(self, limit: int, *, beyond_cap: bool) -> None:
        while self._in_use < limit:
            granted = self._visitors.grant(beyond_cap=beyond_cap)
            if granted is None:
                return
            waiter, claim = granted
            if waiter.future.done():  # cancelled while queued: it takes nothing
                self._visitors.release(claim)
                continue
            self._in_use += 1
            waiter.future.set_result(None)

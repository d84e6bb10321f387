"""One origin concurrency limit shared by visitors' misses and warm visits, visitors first.

``OriginLimiter(max_concurrency, reserve_for_visitors)`` hands out at most
``max_concurrency`` slots (``origin_max_concurrency``). A visitor's miss holds
one for its origin request (``async with limiter.visitor():``), a warm visit
holds one for its own (``async with limiter.warm(max_now):``, ``max_now`` being
the warm throttle's current ``allowed``).

Invariants (one event loop; every wait is FIFO within its kind):
- at most ``max_concurrency`` slots are held at any time;
- a visitor takes a free slot at once: it waits only while every slot is held
  (never for a warm visit while a slot is free); a freed slot goes to the
  longest-waiting visitor before anything else, so visitors wait only while
  all slots are held, and are served in arrival order;
- a warm visit starts only while fewer than ``max_now`` warm visits hold slots
  and more than ``reserve_for_visitors`` slots would stay free after it starts
  (so warm visits never take the last ``reserve`` slots, and never start while
  a visitor waits, since then no slot is free); otherwise it waits, behind the
  warm visits queued before it;
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


class OriginLimiter:
    """Visitors-first origin concurrency limit (see the module docstring)."""

    def __init__(self, max_concurrency: int, reserve_for_visitors: int | None = None) -> None:
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
        self._visitors: deque[_Waiter] = deque()
        self._warm: deque[_Waiter] = deque()

    @property
    def max_concurrency(self) -> int:
        return self._max

    @property
    def reserve_for_visitors(self) -> int:
        return self._max - self._warm_cap

    def stats(self) -> LimiterStats:
        """Slots held and waiters queued, now."""
        return LimiterStats(self._in_use, self._warm_in_use, len(self._visitors),
                            len(self._warm))

    @asynccontextmanager
    async def visitor(self) -> AsyncIterator[None]:
        """Hold one slot for a visitor's origin request."""
        if self._in_use >= self._max:
            await self._wait(self._visitors, self._max, warm=False)
        else:
            self._in_use += 1
        try:
            yield
        finally:
            self._release(warm=False)

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
            await self._wait(self._warm, max_now, warm=True)
        try:
            yield
        finally:
            self._release(warm=True)

    def _warm_may_start(self, max_now: int) -> bool:
        return self._warm_in_use < max_now and self._in_use < self._warm_cap

    async def _wait(self, queue: deque[_Waiter], max_now: int, *, warm: bool) -> None:
        """Queue, and return once :meth:`_dispatch` has handed this waiter a slot."""
        waiter = _Waiter(asyncio.get_running_loop().create_future(), max_now)
        queue.append(waiter)
        try:
            await waiter.future
        except asyncio.CancelledError:
            if not waiter.future.cancelled():
                self._release(warm=warm)  # granted, then cancelled before it resumed
            elif waiter in queue:
                queue.remove(waiter)
                self._dispatch()  # it may have held up the waiters behind it
            raise

    def _release(self, *, warm: bool) -> None:
        self._in_use -= 1
        if warm:
            self._warm_in_use -= 1
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand free slots to queued visitors, then (none left queued) to warm visits.

        A waiter cancelled but not yet resumed is still queued with a done future:
        it is dropped here, not granted.
        """
        while self._visitors and self._in_use < self._max:
            waiter = self._visitors.popleft()
            if not waiter.future.done():
                self._in_use += 1
                waiter.future.set_result(None)
        while self._warm and self._warm_may_start(self._warm[0].max_now):
            waiter = self._warm.popleft()
            if not waiter.future.done():
                self._in_use += 1
                self._warm_in_use += 1
                waiter.future.set_result(None)

"""The one place Stoker reads the time.

Every policy takes ``now`` as an argument; I/O code gets a :class:`Clock`
injected.  ``time.time()`` and ``time.monotonic()`` appear nowhere else in
``src/stoker``, so tests can drive time with :class:`FakeClock`.

Invariant: ``Clock.now()`` is wall-clock epoch seconds (comparable with HTTP
dates and persisted timestamps); ``Clock.monotonic()`` never goes backwards and
is only used for measuring durations inside one process.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    """A source of time; injected into everything that needs ``now``."""

    def now(self) -> float:
        """Wall-clock seconds since the epoch."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (a fake clock may return at once)."""


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class FakeClock:
    """A clock that moves only when told to.

    With ``auto_advance`` (the default) ``sleep`` moves the clock forward by
    the time slept and returns at once; without it ``sleep`` waits until
    :meth:`advance` has moved the clock past the sleeper's deadline (for
    tests that run real servers next to periodic background loops).
    """

    def __init__(self, start: float = 1_700_000_000.0, *, auto_advance: bool = True) -> None:
        self._now = start
        self._mono = 0.0
        self._auto_advance = auto_advance
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        """Move both clocks forward by ``seconds``; wake sleepers now due."""
        self._now += seconds
        self._mono += seconds
        waiting = []
        for deadline, future in self._sleepers:
            if deadline <= self._mono:
                if not future.done():
                    future.set_result(None)
            else:
                waiting.append((deadline, future))
        self._sleepers = waiting

    async def sleep(self, seconds: float) -> None:
        if self._auto_advance:
            self.advance(max(0.0, seconds))
            await asyncio.sleep(0)
            return
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future = asyncio.get_running_loop().create_future()
        self._sleepers.append((self._mono + max(0.0, seconds), future))
        await future

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
    """A clock that moves only when told to; ``sleep`` advances it."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._mono = 0.0

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        """Move both clocks forward by ``seconds``."""
        self._now += seconds
        self._mono += seconds

    async def sleep(self, seconds: float) -> None:
        self.advance(max(0.0, seconds))
        await asyncio.sleep(0)

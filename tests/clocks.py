"""Clocks for tests beyond :class:`stoker.clock.FakeClock`."""

from __future__ import annotations

from collections import Counter

from tests.conftest import until

from stoker.clock import FakeClock


class RecordingClock(FakeClock):
    """A fake clock that remembers every sleep (a retry's backoff)."""

    def __init__(self) -> None:
        super().__init__()
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await super().sleep(seconds)


class SteppedClock(FakeClock):
    """A fake clock that moves only by :meth:`advance` (``auto_advance=False``) and counts
    the sleeps of each length begun (``begun``, which only grows) and not yet over
    (``pending``), so a test advances past a deadline only once the sleep that waits for
    it has begun."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        super().__init__(start, auto_advance=False)
        self.begun: Counter[float] = Counter()
        self.pending: Counter[float] = Counter()

    async def sleep(self, seconds: float) -> None:
        self.begun[seconds] += 1
        self.pending[seconds] += 1
        try:
            await super().sleep(seconds)
        finally:
            self.pending[seconds] -= 1

    async def sleeping(self, seconds: float, count: int = 1) -> None:
        """Return once ``count`` sleeps of ``seconds`` are pending at once."""
        await until(lambda: self.pending[seconds] >= count,
                    f"{count} sleeps of {seconds:g} s pending (pending: {dict(self.pending)})")

"""Clocks for tests beyond :class:`stoker.clock.FakeClock`."""

from __future__ import annotations

from stoker.clock import FakeClock


class RecordingClock(FakeClock):
    """A fake clock that remembers every sleep (a retry's backoff)."""

    def __init__(self) -> None:
        super().__init__()
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await super().sleep(seconds)

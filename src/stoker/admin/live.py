"""The pure parts of the live status stream: the poke debounce and the latest-wins slot.

Invariants:
- :class:`Debounce`: the first poke opens a window of ``delay`` seconds; pokes inside it
  join it; when it has passed, one event is due and the next poke opens a new window.
  So a burst of pokes shorter than ``delay`` gives exactly one event, ``delay`` after its
  first poke, and steady pokes give at most one event per ``delay`` (never starved).
- :class:`Latest`: holds at most one item: a put replaces an item not yet taken (counted
  in ``skipped``), so a slow reader gets the newest state and the writer never waits.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Debounce:
    """Pokes coalesced into windows of ``delay`` seconds (see the module)."""

    delay: float
    due: float | None = None
    """When the open window's event is due (``None``: no window open)."""

    def poke(self, now: float) -> Debounce:
        """After a poke at ``now``."""
        return self if self.due is not None else Debounce(self.delay, now + self.delay)

    def fire(self, now: float) -> tuple[Debounce, bool]:
        """Whether the event is due at ``now``, and the debounce after it is sent."""
        if self.due is None or now < self.due:
            return self, False
        return Debounce(self.delay), True


class Latest(Generic[T]):
    """A one-item slot where the newest item wins (see the module)."""

    def __init__(self) -> None:
        self._item: T | None = None
        self._full = False
        self._ready = asyncio.Event()
        self.skipped = 0

    def put(self, item: T) -> None:
        """Leave ``item`` for the reader, replacing one it has not taken."""
        if self._full:
            self.skipped += 1
        self._item, self._full = item, True
        self._ready.set()

    def take(self) -> T | None:
        """The item waiting, if any, now."""
        item, full = self._item, self._full
        self._item, self._full = None, False
        self._ready.clear()
        return item if full else None

    async def get(self, timeout: float) -> T | None:
        """The next item, or ``None`` after ``timeout`` seconds without one."""
        if not self._full:
            try:
                await asyncio.wait_for(self._ready.wait(), timeout)
            except TimeoutError:
                return None
        return self.take()

"""The live request log's fan-out: every request answered, to whoever watches.

Invariants:
- Unwatched, it costs the serving code one attribute read per request:
  :attr:`RequestTap.watched` is false and nothing is built (callers check it before
  making a :class:`~stoker.proxy.log_record.LogRecord`).
- Each :class:`Watch` has its own filter, applied before queueing, and a bounded queue of
  ``capacity`` records: when full, the oldest record is dropped and counted; the reader
  is told how many were dropped since its last read.  Publishing never waits.
- At most :data:`MAX_WATCHES` watches at once (:meth:`RequestTap.watch` gives ``None``
  beyond).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from dataclasses import dataclass
from typing import Final

from stoker.proxy.log_filter import LogFilter, matches
from stoker.proxy.log_record import LogRecord

MAX_WATCHES: Final = 16
CAPACITY: Final = 1000
"""Records a watch holds for a reader that falls behind."""


@dataclass(frozen=True, slots=True)
class Batch:
    """What a reader takes at once: the records queued, and how many were dropped before
    them since its last take."""

    records: tuple[LogRecord, ...]
    dropped: int


class Watch:
    """One reader's filter and bounded queue (see the module's invariants)."""

    def __init__(self, wanted: LogFilter, capacity: int = CAPACITY) -> None:
        self.wanted = wanted
        self._queue: deque[LogRecord] = deque(maxlen=capacity)
        self._dropped = 0
        self.dropped_total = 0
        self._ready = asyncio.Event()

    def offer(self, record: LogRecord) -> None:
        """Queue ``record`` if it matches, dropping the oldest when full."""
        if not matches(self.wanted, record):
            return
        queue = self._queue
        if len(queue) == queue.maxlen:
            self._dropped += 1
            self.dropped_total += 1
        queue.append(record)
        self._ready.set()

    def take(self) -> Batch:
        """Everything queued now, and the drops before it."""
        batch = Batch(tuple(self._queue), self._dropped)
        self._queue.clear()
        self._dropped = 0
        self._ready.clear()
        return batch

    async def next(self, timeout: float) -> Batch:
        """The next batch, waiting up to ``timeout`` seconds for one (empty after it)."""
        if not self._ready.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), timeout)
        return self.take()


class RequestTap:
    """The watches of one serving process (see the module's invariants)."""

    def __init__(self) -> None:
        self.watched = False
        """Whether anyone watches: the one thing serving code reads when nobody does."""
        self.others = 0
        """The other serving processes whose requests are published here too
        (:mod:`~stoker.app.log_relay`), besides this process's own."""
        self._watches: tuple[Watch, ...] = ()

    @property
    def watches(self) -> int:
        return len(self._watches)

    def watch(self, wanted: LogFilter, capacity: int = CAPACITY) -> Watch | None:
        """A new watch for ``wanted``; ``None`` when :data:`MAX_WATCHES` are open."""
        if len(self._watches) >= MAX_WATCHES:
            return None
        watch = Watch(wanted, capacity)
        self._watches = (*self._watches, watch)
        self.watched = True
        return watch

    def unwatch(self, watch: Watch) -> None:
        """Stop feeding ``watch``."""
        self._watches = tuple(w for w in self._watches if w is not watch)
        self.watched = bool(self._watches)

    def publish(self, record: LogRecord) -> None:
        """Offer ``record`` to every watch (call only while :attr:`watched`)."""
        for watch in self._watches:
            watch.offer(record)

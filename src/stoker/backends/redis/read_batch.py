"""Which reads go to Redis together, and who gets which answer: the pure core of the
Redis tier's read batching (:class:`~stoker.backends.redis.cache_store.RedisCacheStore`
is its I/O shell).

Reads wanted while a batch is in flight wait, and go as the next batch, in one script
call; equal keys are read once and their answer shared.

Invariants:
- At most one batch is in flight; a batch holds distinct keys, at most ``limit``, the
  oldest wanted first.
- A waiter is answered by the first batch *taken after it was wanted* that holds its
  key, never by one already in flight: a read wanted after a write finished is never
  answered with what Redis held before that write.
- Every waiter is answered exactly once (by a result, or by the failure of its batch),
  in the order the waiters of its key were wanted, unless :meth:`ReadBatches.drop`
  hands it back unanswered.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
W = TypeVar("W")


class ReadBatches(Generic[K, W]):
    """Keys wanted, the batch in flight, and their waiters (any objects: the shell's
    futures)."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("a batch holds at least one key")
        self._limit = limit
        self._waiting: dict[K, list[W]] = {}
        """Keys not yet in a batch, oldest first, each with its waiters."""
        self._flying: dict[K, list[W]] | None = None
        """The batch in flight, or ``None``."""
        self._due = False
        """Whether the shell has been told to take a batch and has not yet."""

    @property
    def waiting(self) -> int:
        """Keys wanted and not yet in a batch."""
        return len(self._waiting)

    @property
    def in_flight(self) -> bool:
        return self._flying is not None

    def want(self, key: K, waiter: W) -> bool:
        """Add ``waiter`` for ``key``; true when the shell must now arrange to
        :meth:`take` a batch (nothing in flight or due before)."""
        self._waiting.setdefault(key, []).append(waiter)
        if self._flying is None and not self._due:
            self._due = True
            return True
        return False

    def take(self) -> list[K]:
        """The keys of the next batch, now in flight (none when nothing waits)."""
        if self._flying is not None:
            raise RuntimeError("a batch is in flight already")
        self._due = False
        if not self._waiting:
            return []
        keys = list(self._waiting)[:self._limit]
        self._flying = {key: self._waiting.pop(key) for key in keys}
        return keys

    def finish(self) -> dict[K, list[W]]:
        """The batch in flight is answered (or failed): its keys and their waiters, to be
        told.  If keys wait, their batch is due: the shell takes it next."""
        if self._flying is None:
            raise RuntimeError("no batch is in flight")
        flown, self._flying = self._flying, None
        self._due = bool(self._waiting)
        return flown

    def drop(self) -> list[W]:
        """Forget every key, in flight or waiting: their waiters, to be cancelled."""
        dropped = [waiter for batch in (self._flying or {}, self._waiting)
                   for waiters in batch.values() for waiter in waiters]
        self._flying, self._waiting, self._due = None, {}, False
        return dropped

"""The ``WarmStorage`` port: the warmer's stores on one database, and units of work over them.

Implemented by :class:`stoker.backends.warm_stores.WarmStores` (SQLite or PostgreSQL).

Invariants: ``async with storage.transaction() as tx:`` is one unit of work — every call
made through ``tx``'s stores is committed together when the block ends, or none is when
it raises (a process killed inside the block commits none either).  Inside the block the
stores are reached through ``tx`` only; ``tx``'s stores are unusable after it.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from stoker.cache.hits import HitStatsStore
from stoker.jobs.queue import JobQueue
from stoker.schedule.store import DeadlineStore
from stoker.warm.pending import PendingUrls
from stoker.warm.run_store import RunStore


class WarmUnit(Protocol):
    """The warmer's stores, on the database or bound to one of its transactions."""

    @property
    def queue(self) -> JobQueue: ...

    @property
    def runs(self) -> RunStore: ...

    @property
    def deadlines(self) -> DeadlineStore: ...

    @property
    def pending(self) -> PendingUrls: ...

    @property
    def hits(self) -> HitStatsStore: ...


class WarmStorage(WarmUnit, Protocol):
    """The warmer's stores on one database handle (see the module invariants)."""

    def transaction(self) -> AbstractAsyncContextManager[WarmUnit]:
        """One unit of work: the stores it yields all take part in one transaction."""

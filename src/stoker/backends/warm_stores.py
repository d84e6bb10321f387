"""The warmer's stores over one database handle (a :class:`~stoker.warm.stores.WarmStorage`).

:func:`warm_stores_on_file` builds them on a SQLite file (their handle, closed by
``aclose``), :func:`warm_stores_on_pool` on a PostgreSQL pool (closed by ``aclose`` only
when they own it); which one a configuration gets is
:mod:`stoker.backends.choice`'s to say, and :mod:`stoker.backends.opening` opens it.

Invariants: the warm stores of one :class:`WarmStores` are views over one database
handle (SQLite: one writer connection on one thread; PostgreSQL: one pool), and
:meth:`WarmStores.transaction` is one transaction of that handle spanning them
(:mod:`stoker.warm.stores`); ``aclose`` may be called again (nothing more happens).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncpg

    from stoker.cache.hits import HitStatsStore
    from stoker.clock import Clock
    from stoker.jobs.queue import JobQueue
    from stoker.schedule.store import DeadlineStore
    from stoker.warm.credentials import CredentialStore
    from stoker.warm.pending import PendingUrls
    from stoker.warm.run import RevisitPolicy
    from stoker.warm.run_store import RunStore

H = TypeVar("H")

log = logging.getLogger("stoker")


@dataclass(frozen=True)
class StoreViews:
    """The warmer's stores over one handle: the database, or one of its transactions."""

    queue: JobQueue
    runs: RunStore
    deadlines: DeadlineStore
    pending: PendingUrls
    hits: HitStatsStore
    credentials: CredentialStore


class WarmStores:
    """The stores the warmer needs, views over one database handle (a
    :class:`~stoker.warm.stores.WarmStorage`); ``aclose`` closes the handle (when the
    stores own it)."""

    def __init__(self, begin: Callable[[], AbstractAsyncContextManager[H]],
                 views: Callable[[H], StoreViews], database: H,
                 close: Callable[[], Awaitable[None]]) -> None:
        stores = views(database)
        self.queue, self.runs, self.deadlines = stores.queue, stores.runs, stores.deadlines
        self.pending, self.hits, self.credentials = stores.pending, stores.hits, stores.credentials
        self._begin: Callable[[], AbstractAsyncContextManager[Any]] = begin
        self._views: Callable[[Any], StoreViews] = views
        self._close = close
        self._closed = False

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[StoreViews]:
        """One transaction of the handle; the stores it yields take part in it."""
        async with self._begin() as tx:
            yield self._views(tx)

    async def aclose(self) -> None:
        """Close the queue (its listener) and the database handle, the first time."""
        if self._closed:
            return
        self._closed = True
        try:
            await self.queue.aclose()
        except Exception:
            log.exception("closing the warm job queue failed")
        await self._close()


async def warm_stores_on_file(path: Path, clock: Clock, policy: RevisitPolicy) -> WarmStores:
    """The warm stores on the SQLite file ``path`` (created and migrated), one handle."""
    from stoker.backends.sqlite.credentials import SqliteCredentialStore
    from stoker.backends.sqlite.database import SqliteDatabase, SqliteHandle
    from stoker.backends.sqlite.deadline_store import SqliteDeadlineStore
    from stoker.backends.sqlite.hit_stats import SqliteHitStatsStore
    from stoker.backends.sqlite.job_queue import SqliteJobQueue
    from stoker.backends.sqlite.pending_urls import SqlitePendingUrls
    from stoker.backends.sqlite.run_store import SqliteRunStore

    def views(db: SqliteHandle) -> StoreViews:
        return StoreViews(SqliteJobQueue(db, clock), SqliteRunStore(db, policy),
                          SqliteDeadlineStore(db), SqlitePendingUrls(db), SqliteHitStatsStore(db),
                          SqliteCredentialStore(db))

    database = await SqliteDatabase.open(path)
    handle: SqliteHandle = database
    return WarmStores(database.transaction, views, handle, database.close)


async def warm_stores_on_pool(pool: asyncpg.Pool, clock: Clock, policy: RevisitPolicy, *,
                              owns: bool = False) -> WarmStores:
    """The warm stores on ``pool`` (migrated here); ``aclose`` closes the pool when they
    ``owns`` it, else leaves it open: it belongs to whoever gave it."""
    from stoker.backends.postgres.credentials import PostgresCredentialStore
    from stoker.backends.postgres.database import PostgresDatabase, PostgresHandle
    from stoker.backends.postgres.deadline_store import PostgresDeadlineStore
    from stoker.backends.postgres.hit_stats import PostgresHitStatsStore
    from stoker.backends.postgres.job_queue import PostgresJobQueue
    from stoker.backends.postgres.pending_urls import PostgresPendingUrls
    from stoker.backends.postgres.run_store import PostgresRunStore

    def views(db: PostgresHandle) -> StoreViews:
        return StoreViews(PostgresJobQueue(db, clock), PostgresRunStore(db, policy),
                          PostgresDeadlineStore(db), PostgresPendingUrls(db),
                          PostgresHitStatsStore(db), PostgresCredentialStore(db))

    database = await PostgresDatabase.open(pool)
    handle: PostgresHandle = database
    return WarmStores(database.transaction, views, handle,
                      database.close if owns else _kept_open)


async def _kept_open() -> None:
    """Nothing to close: the pool belongs to whoever gave it."""

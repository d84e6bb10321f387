"""Storage backends: SQLite (embedded, the default) and PostgreSQL (``database_url``).

:func:`open_queue` picks the job queue's backend from the settings, and
:func:`open_warm_stores` every store the warmer uses: PostgreSQL when
``database_url`` is set, else SQLite at ``settings.sqlite_path``. Backends are
imported lazily, so importing ``stoker.backends`` never imports a driver.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stoker.cache.hits import HitStatsStore
    from stoker.clock import Clock
    from stoker.jobs.queue import JobQueue
    from stoker.schedule.store import DeadlineStore
    from stoker.settings import Settings
    from stoker.warm.pending import PendingUrls
    from stoker.warm.run import RevisitPolicy
    from stoker.warm.run_store import RunStore

log = logging.getLogger("stoker")


async def open_queue(settings: Settings, clock: Clock) -> JobQueue:
    """Open (and migrate) the job queue the settings point at; ``aclose`` it when done."""
    if settings.database_url:
        from stoker.backends.postgres.connection import create_pool, migrate
        from stoker.backends.postgres.job_queue import MIGRATIONS_PACKAGE, PostgresJobQueue

        pool = await create_pool(settings.database_url)
        try:
            await migrate(pool, "jobs", MIGRATIONS_PACKAGE)
        except BaseException:
            await pool.close()
            raise
        return PostgresJobQueue(pool, clock, owns_pool=True)
    from stoker.backends.sqlite.job_queue import SqliteJobQueue
    from stoker.settings import require_data_dir

    require_data_dir(settings)
    return await SqliteJobQueue.open(settings.sqlite_path, clock)


@dataclass
class WarmStores:
    """The stores the warmer needs, on one backend; ``aclose`` closes them all."""

    queue: JobQueue
    runs: RunStore
    deadlines: DeadlineStore
    pending: PendingUrls
    hits: HitStatsStore
    _close_pool: Callable[[], Awaitable[None]] | None = None

    async def aclose(self) -> None:
        """Close every store (and the shared pool); safe to call once."""
        for close in (self.queue.aclose, self.runs.aclose, self.deadlines.aclose,
                      self.pending.aclose, self.hits.close):
            try:
                await close()
            except Exception:
                log.exception("closing a warm store failed")
        if self._close_pool is not None:
            await self._close_pool()


async def open_warm_stores(settings: Settings, clock: Clock,
                           policy: RevisitPolicy) -> WarmStores:
    """The queue, runs, deadlines, pending URLs and hit statistics the settings point at:
    PostgreSQL (one pool) with ``database_url``, else SQLite at ``settings.sqlite_path``."""
    if settings.database_url:
        return await _open_postgres(settings.database_url, clock, policy)
    from stoker.backends.sqlite.deadline_store import SqliteDeadlineStore
    from stoker.backends.sqlite.hit_stats import SqliteHitStatsStore
    from stoker.backends.sqlite.pending_urls import SqlitePendingUrls
    from stoker.backends.sqlite.run_store import SqliteRunStore

    path = settings.sqlite_path
    queue = await open_queue(settings, clock)
    opened: list[Callable[[], Awaitable[None]]] = [queue.aclose]
    try:
        runs = await SqliteRunStore.open(path, policy)
        opened.append(runs.aclose)
        deadlines = await SqliteDeadlineStore.open(path)
        opened.append(deadlines.aclose)
        pending = await SqlitePendingUrls.open(path)
        opened.append(pending.aclose)
        hits = await SqliteHitStatsStore.open(path)
    except BaseException:
        for close in reversed(opened):
            await close()
        raise
    return WarmStores(queue, runs, deadlines, pending, hits)


async def _open_postgres(url: str, clock: Clock, policy: RevisitPolicy) -> WarmStores:
    from stoker.backends.postgres.connection import create_pool, migrate
    from stoker.backends.postgres.deadline_store import PostgresDeadlineStore
    from stoker.backends.postgres.hit_stats import PostgresHitStatsStore
    from stoker.backends.postgres.job_queue import MIGRATIONS_PACKAGE, PostgresJobQueue
    from stoker.backends.postgres.pending_urls import PostgresPendingUrls
    from stoker.backends.postgres.run_store import PostgresRunStore

    pool = await create_pool(url)
    try:
        await migrate(pool, "jobs", MIGRATIONS_PACKAGE)
        return WarmStores(
            PostgresJobQueue(pool, clock), await PostgresRunStore.open(pool, policy),
            await PostgresDeadlineStore.open(pool), await PostgresPendingUrls.open(pool),
            await PostgresHitStatsStore.open(pool), pool.close)
    except BaseException:
        await pool.close()
        raise

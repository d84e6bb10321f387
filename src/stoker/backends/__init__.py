"""Storage backends: SQLite (embedded, the default) and PostgreSQL (``database_url``).

:func:`open_queue` picks the job queue's backend from the settings: PostgreSQL
when ``database_url`` is set, else SQLite at ``settings.sqlite_path``. Backends
are imported lazily, so importing ``stoker.backends`` never imports a driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stoker.clock import Clock
    from stoker.jobs.queue import JobQueue
    from stoker.settings import Settings


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

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return await SqliteJobQueue.open(settings.sqlite_path, clock)

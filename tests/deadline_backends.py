"""Test helpers for the deadline stores: open either backend in an isolated place.

``target`` is the SQLite file for ``sqlite`` and a schema of its own (see
``tests.job_backends.pg_schema``) for ``postgres``; PostgreSQL is required.
"""

from __future__ import annotations

from pathlib import Path

from tests.job_backends import PG_URL

from stoker.backends.postgres.connection import create_pool
from stoker.backends.postgres.deadline_store import PostgresDeadlineStore
from stoker.backends.sqlite.deadline_store import SqliteDeadlineStore
from stoker.schedule.store import DeadlineStore

BACKENDS = ("sqlite", "postgres")


async def open_store(backend: str, target: str, *, truncate: bool = False) -> DeadlineStore:
    """Open (and migrate) the deadlines of ``target``; ``truncate``: start empty."""
    if backend == "sqlite":
        return await SqliteDeadlineStore.open(Path(target))
    pool = await create_pool(PG_URL, schema=target, min_size=1, max_size=4)
    store = await PostgresDeadlineStore.open(pool, owns_pool=True)
    if truncate:
        await pool.execute("TRUNCATE deadlines")
    return store

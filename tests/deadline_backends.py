"""Test helpers for the deadline stores: open either backend in an isolated place, and
the fixtures every deadline test module shares (import them into the module).

``target`` is the SQLite file for ``sqlite`` and a schema of its own (see
``tests.job_backends.pg_schema``) for ``postgres``; PostgreSQL is required.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from tests.job_backends import PG_URL, pg_schema, place

from stoker.backends.postgres.connection import create_pool
from stoker.backends.postgres.database import PostgresDatabase
from stoker.backends.postgres.deadline_store import PostgresDeadlineStore
from stoker.backends.sqlite.database import SqliteDatabase
from stoker.backends.sqlite.deadline_store import SqliteDeadlineStore
from stoker.schedule.store import DeadlineStore

BACKENDS = ("sqlite", "postgres")


async def open_store(backend: str, target: str, *, truncate: bool = False) -> DeadlineStore:
    """Open (and migrate) the deadlines of ``target``; ``truncate``: start empty."""
    if backend == "sqlite":
        return SqliteDeadlineStore(await SqliteDatabase.open(Path(target)), owns=True)
    pool = await create_pool(PG_URL, schema=target, min_size=1, max_size=4)
    store = PostgresDeadlineStore(await PostgresDatabase.open(pool), owns=True)
    if truncate:
        await pool.execute("TRUNCATE deadlines")
    return store


@pytest.fixture(scope="module")
def pg_deadline_schema() -> Iterator[str]:
    with pg_schema(migrated=False) as schema:
        yield schema


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def target(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return place(backend, tmp_path, request, "pg_deadline_schema")


@pytest.fixture
async def store(backend: str, target: str) -> AsyncIterator[DeadlineStore]:
    opened = await open_store(backend, target, truncate=True)
    yield opened
    await opened.aclose()

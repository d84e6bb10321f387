"""Test helpers for the job queue: open either backend in an isolated place.

PostgreSQL tests run in a schema of their own (``stoker_test_<random>``), so
parallel runs on the same database never see each other's rows. PostgreSQL is
required: when it is unreachable the tests fail with a message saying so.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import asyncpg
import pytest

from stoker.backends.postgres.connection import create_pool
from stoker.backends.postgres.database import PostgresDatabase
from stoker.backends.postgres.job_queue import PostgresJobQueue
from stoker.backends.sqlite.database import SqliteDatabase
from stoker.backends.sqlite.job_queue import SqliteJobQueue
from stoker.clock import Clock
from stoker.jobs.queue import JobQueue

PG_URL = os.environ.get("STOKER_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")


def schema_url(schema: str) -> str:
    """:data:`PG_URL` with ``schema`` as its search path: a ``database_url`` for a test."""
    return f"{PG_URL}{'&' if '?' in PG_URL else '?'}search_path={schema}"
BACKENDS = ("sqlite", "postgres")


async def _admin(sql: str) -> None:
    try:
        conn = await asyncpg.connect(PG_URL, timeout=5)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        pytest.fail(
            f"PostgreSQL is unreachable at {PG_URL} ({exc!r}); the job queue tests need it "
            "(start it, or point STOKER_TEST_DATABASE_URL at one).", pytrace=False)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def _create(schema: str, migrated: bool) -> None:
    await _admin(f"CREATE SCHEMA {schema}")
    if not migrated:
        return
    pool = await create_pool(PG_URL, schema=schema, min_size=1, max_size=1)
    try:
        await PostgresDatabase.open(pool)
    finally:
        await pool.close()


def _run(coroutine: Coroutine[object, object, None]) -> None:
    """Run on a thread of its own: fixtures may be set up inside a running loop."""
    with ThreadPoolExecutor(max_workers=1) as thread:
        thread.submit(asyncio.run, coroutine).result()


@contextmanager
def pg_schema(*, migrated: bool = True) -> Iterator[str]:
    """A fresh schema (migrated unless told otherwise) for this test; dropped afterwards."""
    schema = f"stoker_test_{uuid.uuid4().hex[:12]}"
    _run(_create(schema, migrated))
    try:
        yield schema
    finally:
        _run(_admin(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))


async def open_postgres(schema: str, clock: Clock, *, truncate: bool = True,
                        **options: object) -> PostgresJobQueue:
    pool = await create_pool(PG_URL, schema=schema, min_size=1, max_size=8)
    if truncate:
        await pool.execute("TRUNCATE jobs RESTART IDENTITY")
    return PostgresJobQueue(PostgresDatabase(pool), clock, owns=True,  # type: ignore[arg-type]
                            **options)


async def open_queue(backend: str, target: str, clock: Clock, *, truncate: bool = False,
                     **options: object) -> JobQueue:
    """``target`` is the SQLite file for ``sqlite`` and the schema for ``postgres``."""
    if backend == "sqlite":
        return SqliteJobQueue(await SqliteDatabase.open(Path(target)), clock, owns=True,
                              **options)  # type: ignore[arg-type]
    return await open_postgres(target, clock, truncate=truncate, **options)


def place(backend: str, tmp_path: Path, request: pytest.FixtureRequest, schema_fixture: str,
          filename: str = "stoker.db") -> str:
    """Where a store of ``backend`` lives in a test: a SQLite file under ``tmp_path``, or the
    PostgreSQL schema the fixture named ``schema_fixture`` made."""
    if backend == "sqlite":
        return str(tmp_path / filename)
    return str(request.getfixturevalue(schema_fixture))


@contextmanager
def fresh_target(backend: str, tmp_path: Path) -> Iterator[str]:
    """A new place for a store of ``backend``: a SQLite file under ``tmp_path``, or a
    PostgreSQL schema of its own (unmigrated; dropped afterwards)."""
    if backend == "sqlite":
        yield str(tmp_path / "stoker.db")
        return
    with pg_schema(migrated=False) as schema:
        yield schema

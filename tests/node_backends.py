"""Test helpers for the stores the members of one cache share (purge bus, fetch leases,
audit log): open them on either backend, each as a member of its own would, and the
fixtures every such test module shares (import them into the module).

A place is a SQLite file under ``tmp_path`` for ``sqlite`` and a schema of its own (see
``tests.job_backends.pg_schema``) for ``postgres``; PostgreSQL is required.  Every store
opened through :class:`Members` has a connection of its own (SQLite) or a pool of its own
(PostgreSQL) on that place, and is closed, with its pool, when the test ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Protocol, TypeVar

import asyncpg
import pytest
from tests.job_backends import BACKENDS, PG_URL, pg_schema

from stoker.backends.postgres.connection import create_pool


class Closing(Protocol):
    async def close(self) -> None: ...


Store = TypeVar("Store", bound=Closing)


class Members:
    """Opens stores on one place of one backend, one connection or pool each."""

    def __init__(self, backend: str, place: str) -> None:
        self.backend = backend
        self.place = place
        self._stores: list[Closing] = []
        self._pools: list[asyncpg.Pool] = []

    async def open(self, sqlite: Callable[[Path], Awaitable[Store]],
                   postgres: Callable[[asyncpg.Pool], Awaitable[Store]]) -> Store:
        """A store opened by ``sqlite`` on the file or ``postgres`` on a new pool."""
        if self.backend == "sqlite":
            store = await sqlite(Path(self.place))
        else:
            pool = await create_pool(PG_URL, schema=self.place, min_size=1, max_size=5)
            self._pools.append(pool)
            store = await postgres(pool)
        self._stores.append(store)
        return store

    async def close(self) -> None:
        """Close every store, then every pool (a PostgreSQL store leaves its pool open)."""
        for store in self._stores:
            await store.close()
        for pool in self._pools:
            await pool.close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def place(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield str(tmp_path / "cache.db")
        return
    with pg_schema(migrated=False) as schema:
        yield schema


@pytest.fixture
async def members(backend: str, place: str) -> AsyncIterator[Members]:
    opened = Members(backend, place)
    yield opened
    await opened.close()

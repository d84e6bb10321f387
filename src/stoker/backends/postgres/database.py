"""The warm stores' one PostgreSQL handle: the pool, and units of work spanning several stores.

Lifecycle: ``db = await PostgresDatabase.open(pool)`` (applies the migrations of every
component in :data:`COMPONENTS`); stores are views over it (they take ``db``, or a
:class:`PostgresTransaction` for calls inside a unit of work); ``await db.close()``
closes the pool.

Invariants:
- Outside a unit of work a store's statement runs on any connection of the pool
  (:attr:`PostgresHandle.executor`), a store's own transaction on one it acquires.
- ``async with db.transaction() as tx:`` holds one connection of the pool in one
  transaction: the views bound to ``tx`` run every statement on it (each store's own
  transaction becomes a savepoint of it), and an exception leaving the block rolls it
  all back.  Statements through ``tx`` run one at a time (one connection).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final, Protocol

import asyncpg

from stoker.backends.postgres.connection import migrate

COMPONENTS: Final = ("jobs", "runs", "deadlines", "pending", "hits", "credentials")
"""Every component of the warm stores, in the order their migrations are applied."""


class PostgresHandle(Protocol):
    """What a store view runs its statements on: the database or one of its transactions."""

    @property
    def pool(self) -> asyncpg.Pool: ...

    @property
    def executor(self) -> Any:
        """Where a statement of its own runs: the pool, or the transaction's connection."""

    def acquire(self) -> AbstractAsyncContextManager[Any]:
        """A connection for a store's own transaction."""

    async def close(self) -> None: ...


class PostgresTransaction:
    """One open unit of work of a :class:`PostgresDatabase` (see the module invariants)."""

    def __init__(self, pool: asyncpg.Pool, conn: Any) -> None:
        self.pool = pool
        self.executor = conn

    @asynccontextmanager
    async def acquire(self) -> AsyncIterator[Any]:
        """The transaction's connection."""
        yield self.executor

    async def close(self) -> None:
        """Nothing: the transaction ends with its ``async with`` block."""


class PostgresDatabase:
    """The pool of the warm stores (see the module invariants)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self.executor = pool

    @classmethod
    async def open(cls, pool: asyncpg.Pool) -> PostgresDatabase:
        """Apply every component's pending migrations on ``pool`` and wrap it."""
        for component in COMPONENTS:
            await migrate(pool, component)
        return cls(pool)

    def acquire(self) -> AbstractAsyncContextManager[Any]:
        """A connection of the pool."""
        return self.pool.acquire()  # type: ignore[no-any-return]

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PostgresTransaction]:
        """One connection in one transaction for the calls made through the
        :class:`PostgresTransaction` it yields; rolled back if the block raises."""
        async with self.pool.acquire() as conn, conn.transaction():
            yield PostgresTransaction(self.pool, conn)

    async def close(self) -> None:
        """Close the pool."""
        await self.pool.close()

"""The warm stores' one SQLite handle: one writer connection on one thread, and units of
work spanning several stores.

Lifecycle: ``db = await SqliteDatabase.open(path)`` (connects and applies the migrations
of every component in :data:`COMPONENTS`); stores are views over it (they take ``db``, or
a :class:`SqliteTransaction` for calls inside a unit of work); ``await db.close()``.

Invariants:
- Every store call runs on the one thread owning the one connection
  (:class:`~stoker.backends.sqlite.connection.SqliteThread`), one call at a time.
- ``async with db.transaction() as tx:`` is one ``BEGIN IMMEDIATE … COMMIT`` on that
  thread: the calls of the views bound to ``tx`` run inside it (each store's own
  transaction becomes a savepoint of it), an exception leaving the block rolls it all
  back, and no call through ``db`` runs until it ends (other tasks wait for it).
- A call through ``db`` from the task holding the transaction raises ``RuntimeError``
  rather than waiting for itself: inside the block, stores are reached through ``tx``.
- A :class:`SqliteTransaction` refuses calls once its block has ended.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final, Protocol, TypeVar

from stoker.backends.sqlite.connection import SqliteThread

T = TypeVar("T")

COMPONENTS: Final = ("jobs", "runs", "deadlines", "pending", "hits", "credentials")
"""Every component of the warm stores, in the order their migrations are applied."""


class SqliteHandle(Protocol):
    """What a store view runs its work through: the database or one of its transactions."""

    @property
    def path(self) -> Path: ...

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T: ...

    async def close(self) -> None: ...


class SqliteTransaction:
    """One open unit of work of a :class:`SqliteDatabase` (see the module invariants)."""

    def __init__(self, thread: SqliteThread) -> None:
        self._thread: SqliteThread | None = thread
        self.path = thread.path

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(connection)`` inside the transaction."""
        if self._thread is None:
            raise RuntimeError("a store bound to a transaction used after it ended")
        return await self._thread.run(work)

    async def close(self) -> None:
        """Nothing: the transaction ends with its ``async with`` block."""

    def _end(self) -> None:
        self._thread = None


def _begin(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")


def _commit(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("COMMIT")
    except BaseException:
        _rollback(conn)
        raise


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")


class SqliteDatabase:
    """The one writer connection of the warm stores (see the module invariants)."""

    def __init__(self, thread: SqliteThread) -> None:
        self._thread = thread
        self.path = thread.path
        self._lock = asyncio.Lock()
        self._holder: asyncio.Task[object] | None = None

    @classmethod
    async def open(cls, path: Path) -> SqliteDatabase:
        """Connect to ``path`` (created if missing) and migrate every component."""
        thread = SqliteThread(path, "warm", COMPONENTS)
        await thread.start()
        return cls(thread)

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(connection)`` on the writer thread, outside any transaction."""
        if self._holder is not None and self._holder is asyncio.current_task():
            raise RuntimeError("inside db.transaction(), reach the stores through the "
                               "transaction's views")
        async with self._lock:
            return await self._thread.run(work)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteTransaction]:
        """One ``BEGIN IMMEDIATE … COMMIT`` spanning the calls made through the
        :class:`SqliteTransaction` it yields; rolled back if the block raises."""
        async with self._lock:
            self._holder = asyncio.current_task()
            tx = SqliteTransaction(self._thread)
            try:
                await self._thread.run(_begin)
                try:
                    yield tx
                except BaseException:
                    await self._thread.run(_rollback)
                    raise
                await self._thread.run(_commit)
            finally:
                tx._end()
                self._holder = None

    async def close(self) -> None:
        """Close the connection and stop its thread (idempotent)."""
        async with self._lock:
            await self._thread.close()

"""The SQLite ``DeadlineStore``: the ``deadlines`` table in a file shared by local processes.

Lifecycle: ``store = SqliteDeadlineStore(db)`` over a
:class:`~stoker.backends.sqlite.database.SqliteHandle`; ``await store.aclose()`` closes
``db`` only when the store ``owns`` it.

Invariants (beyond those of ``stoker.schedule.store``):
- Every change is one ``BEGIN IMMEDIATE`` transaction that reads the row,
  applies the pure transition and writes it back: the write lock is taken
  before the read, so two processes claiming at once serialise and the second
  sees the first one's claim.
- All SQLite work runs on the handle's thread owning its only connection, so
  the event loop never waits on the file. The schema comes from the
  ``deadlines`` migrations.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TypeVar

from stoker.backends.sqlite.connection import immediate
from stoker.backends.sqlite.database import SqliteHandle
from stoker.schedule.row_changes import RowChanges
from stoker.schedule.store import (
    COLUMNS,
    Deadline,
    deadline_from_row,
    deadline_values,
)

_SELECT = f"SELECT {', '.join(COLUMNS)} FROM deadlines"
_SELECT_ONE = f"{_SELECT} WHERE name = ?"
_UPSERT = (
    f"INSERT INTO deadlines ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})"
    " ON CONFLICT (name) DO UPDATE SET "
    + ", ".join(f"{column} = excluded.{column}" for column in COLUMNS[1:])
)

Row = TypeVar("Row", bound=Deadline | None)


def _transact(conn: sqlite3.Connection, name: str,
              change: Callable[[Deadline | None], Row]) -> Row:
    """Read ``name``, apply ``change``, write its result (``None``: leave the row as it is)."""
    with immediate(conn):
        row = conn.execute(_SELECT_ONE, (name,)).fetchone()
        new = change(None if row is None else deadline_from_row(row))
        if new is not None:
            conn.execute(_UPSERT, deadline_values(new))
    return new


def _list(conn: sqlite3.Connection) -> list[Deadline]:
    return [deadline_from_row(row) for row in conn.execute(f"{_SELECT} ORDER BY name")]


class SqliteDeadlineStore(RowChanges):
    """``DeadlineStore`` on a SQLite file (see the module invariants)."""

    def __init__(self, db: SqliteHandle, *, owns: bool = False) -> None:
        self._db = db
        self._owns = owns

    async def _change(self, name: str, change: Callable[[Deadline | None], Row], *,
                      create: bool = False) -> Row:
        return await self._db.run(lambda conn: _transact(conn, name, change))

    async def list(self) -> list[Deadline]:
        return await self._db.run(_list)

    async def aclose(self) -> None:
        if self._owns:
            await self._db.close()

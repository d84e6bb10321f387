"""The PostgreSQL ``DeadlineStore``: the ``deadlines`` table shared by every node.

Lifecycle: ``store = PostgresDeadlineStore(db)`` over a
:class:`~stoker.backends.postgres.database.PostgresHandle`; ``await store.aclose()``
closes ``db`` only when the store ``owns`` it.

Invariants (beyond those of ``stoker.schedule.store``):
- Every change is one transaction that locks the row (``SELECT ... FOR
  UPDATE``), applies the pure transition and writes it back: a concurrent
  claimer on any node waits for the lock, then reads the committed claim and
  gets nothing. ``arm`` first inserts the row if missing (``ON CONFLICT DO
  NOTHING``) so even the first arm of a name has a row to lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from stoker.backends.postgres.database import PostgresHandle
from stoker.schedule.row_changes import RowChanges
from stoker.schedule.store import (
    COLUMNS,
    Deadline,
    deadline_from_row,
    deadline_values,
)

_SELECT = f"SELECT {', '.join(COLUMNS)} FROM deadlines"
_LOCK_ONE = f"{_SELECT} WHERE name = $1 FOR UPDATE"
_CREATE = "INSERT INTO deadlines (name) VALUES ($1) ON CONFLICT (name) DO NOTHING"
_UPDATE = "UPDATE deadlines SET " + ", ".join(
    f"{column} = ${number}" for number, column in enumerate(COLUMNS[1:], start=2)
) + " WHERE name = $1"

Row = TypeVar("Row", bound=Deadline | None)


class PostgresDeadlineStore(RowChanges):
    """``DeadlineStore`` on a PostgreSQL pool (see the module invariants)."""

    def __init__(self, db: PostgresHandle, *, owns: bool = False) -> None:
        self._db = db
        self._owns = owns


    async def _change(self, name: str, change: Callable[[Deadline | None], Row], *,
                      create: bool = False) -> Row:
        """Lock ``name``'s row, apply ``change``, write its result (``None``: no write)."""
        async with self._db.acquire() as conn, conn.transaction():
            if create:
                await conn.execute(_CREATE, name)
            row = await conn.fetchrow(_LOCK_ONE, name)
            new = change(None if row is None else deadline_from_row(row))
            if new is not None:
                await conn.execute(_UPDATE, *deadline_values(new))
        return new

    async def list(self) -> list[Deadline]:
        rows = await self._db.executor.fetch(f"{_SELECT} ORDER BY name")
        return [deadline_from_row(row) for row in rows]

    async def aclose(self) -> None:
        if self._owns:
            await self._db.close()

"""The SQLite :class:`~stoker.cache.fetch_leases.FetchLeases`, in the file the processes
of one machine share (``data_dir/cache.db``).

Invariants (beyond the port's): taking is one ``BEGIN IMMEDIATE`` transaction (a dead
lease removed, then an insert that a live one makes a no-op), so two processes never both
take a key; renewing is one update that only the owner's live row passes; one thread of
its own at the loop's priority (a miss waits on it); the schema comes from the ``bus``
migrations.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Final

from stoker.backends.sqlite.connection import SqliteThread, immediate
from stoker.cache.fetch_leases import Holder

COMPONENT: Final = "bus"
_EXPIRED: Final = "DELETE FROM fetch_leases WHERE key = ? AND expires < ?"
_TAKE: Final = "INSERT OR IGNORE INTO fetch_leases (key, owner, expires) VALUES (?, ?, ?)"
_RENEW: Final = ("UPDATE fetch_leases SET expires = ? "
                 "WHERE key = ? AND owner = ? AND expires >= ?")
_HOLDER: Final = "SELECT owner, expires FROM fetch_leases WHERE key = ?"
_RELEASE: Final = "DELETE FROM fetch_leases WHERE key = ? AND owner = ?"


class SqliteFetchLeases:
    """Fetch leases on a SQLite file (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self._db = SqliteThread(path, "leases", (COMPONENT,), background=False)

    @classmethod
    async def open(cls, path: Path) -> SqliteFetchLeases:
        """Connect and migrate."""
        leases = cls(path)
        await leases._db.start()
        return leases

    async def take(self, key: str, owner: str, until: float, now: float) -> bool:
        return await self._db.run(lambda conn: _take(conn, key, owner, until, now))

    async def renew(self, key: str, owner: str, until: float, now: float) -> bool:
        return await self._db.run(
            lambda conn: conn.execute(_RENEW, (until, key, owner, now)).rowcount == 1)

    async def holder(self, key: str) -> Holder | None:
        return await self._db.run(lambda conn: _holder(conn, key))

    async def release(self, key: str, owner: str) -> None:
        await self._db.run(lambda conn: conn.execute(_RELEASE, (key, owner)))

    async def close(self) -> None:
        await self._db.close()


def _take(conn: sqlite3.Connection, key: str, owner: str, until: float, now: float) -> bool:
    with immediate(conn):
        conn.execute(_EXPIRED, (key, now))
        return conn.execute(_TAKE, (key, owner, until)).rowcount == 1


def _holder(conn: sqlite3.Connection, key: str) -> Holder | None:
    row = conn.execute(_HOLDER, (key,)).fetchone()
    return None if row is None else Holder(row[0], float(row[1]))

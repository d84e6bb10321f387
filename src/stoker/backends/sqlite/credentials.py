"""``CredentialStore`` on SQLite (``data_dir/stoker.db``); see :mod:`stoker.warm.credentials`.

A view over a :class:`~stoker.backends.sqlite.database.SqliteHandle`; one row per name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from stoker.backends.sqlite.database import SqliteHandle
from stoker.warm.credentials import CredentialInfo, fingerprint

PUT = """
INSERT INTO warm_credentials (name, value, fingerprint, set_at) VALUES (?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET value = excluded.value, fingerprint = excluded.fingerprint,
                                 set_at = excluded.set_at
"""
DELETE = "DELETE FROM warm_credentials WHERE name = ?"
LISTED = "SELECT name, fingerprint, set_at FROM warm_credentials ORDER BY name"
VALUES = "SELECT name, value FROM warm_credentials"


class SqliteCredentialStore:
    """Warm credentials in one SQLite table, on the handle's thread."""

    def __init__(self, db: SqliteHandle) -> None:
        self._db = db

    async def put(self, name: str, value: str, now: float) -> None:
        await self._db.run(lambda conn: conn.execute(PUT, (name, value, fingerprint(value), now)))

    async def delete(self, name: str) -> bool:
        return bool(await self._db.run(lambda conn: conn.execute(DELETE, (name,)).rowcount))

    async def listed(self) -> Sequence[CredentialInfo]:
        rows = await self._db.run(lambda conn: conn.execute(LISTED).fetchall())
        return [CredentialInfo(name, mark, set_at) for name, mark, set_at in rows]

    async def values(self) -> Mapping[str, str]:
        return dict(await self._db.run(lambda conn: conn.execute(VALUES).fetchall()))

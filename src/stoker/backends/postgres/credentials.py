"""``CredentialStore`` on PostgreSQL (``database_url``); see :mod:`stoker.warm.credentials`.

A view over a :class:`~stoker.backends.postgres.database.PostgresHandle`; one row per name,
shared by every node on the database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from stoker.backends.postgres.database import PostgresHandle
from stoker.warm.credentials import CredentialInfo, fingerprint

PUT = """
INSERT INTO warm_credentials (name, value, fingerprint, set_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (name) DO UPDATE SET value = excluded.value, fingerprint = excluded.fingerprint,
                                 set_at = excluded.set_at
"""
DELETE = "DELETE FROM warm_credentials WHERE name = $1"
LISTED = "SELECT name, fingerprint, set_at FROM warm_credentials ORDER BY name"
VALUES = "SELECT name, value FROM warm_credentials"


class PostgresCredentialStore:
    """Warm credentials in one PostgreSQL table."""

    def __init__(self, db: PostgresHandle) -> None:
        self._db = db

    async def put(self, name: str, value: str, now: float) -> None:
        await self._db.executor.execute(PUT, name, value, fingerprint(value), now)

    async def delete(self, name: str) -> bool:
        status: str = await self._db.executor.execute(DELETE, name)
        return status.rsplit(" ", 1)[1] != "0"

    async def listed(self) -> Sequence[CredentialInfo]:
        rows = await self._db.executor.fetch(LISTED)
        return [CredentialInfo(row["name"], row["fingerprint"], row["set_at"]) for row in rows]

    async def values(self) -> Mapping[str, str]:
        return {row["name"]: row["value"] for row in await self._db.executor.fetch(VALUES)}

"""The PostgreSQL :class:`~stoker.cache.fetch_leases.FetchLeases`, in the database the
nodes of one cache share.

Lifecycle: ``leases = await PostgresFetchLeases.open(pool)`` (applies the ``bus``
migrations); ``await leases.close()`` leaves the pool open: it belongs to whoever gave it.

Invariants (beyond the port's): taking is one statement, an insert that a key's existing
row turns into an update only when that row's lease has expired (``ON CONFLICT ... DO
UPDATE ... WHERE``).  PostgreSQL makes concurrent takers of one key wait on its row and
judge the newest version of it, so of any number of takers on any number of nodes at most
one gets a live lease; a lease expiring at ``now`` is still live (as on SQLite).  Renewing
is one update that only the owner's live row passes, so a renewal racing a takeover of a
dead lease loses to it.  Every call is one statement on any connection of the pool.
"""

from __future__ import annotations

from typing import Final

import asyncpg

from stoker.backends.postgres.connection import migrate
from stoker.cache.fetch_leases import Holder

COMPONENT: Final = "bus"
_TAKE: Final = """
INSERT INTO fetch_leases (key, owner, expires) VALUES ($1, $2, $3)
ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
WHERE fetch_leases.expires < $4
RETURNING true
"""
_RENEW: Final = """
UPDATE fetch_leases SET expires = $3 WHERE key = $1 AND owner = $2 AND expires >= $4
RETURNING true
"""
_HOLDER: Final = "SELECT owner, expires FROM fetch_leases WHERE key = $1"
_RELEASE: Final = "DELETE FROM fetch_leases WHERE key = $1 AND owner = $2"


class PostgresFetchLeases:
    """Fetch leases on an asyncpg pool (see the module docstring)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    @classmethod
    async def open(cls, pool: asyncpg.Pool) -> PostgresFetchLeases:
        """Apply the ``bus`` migrations on ``pool`` and use it."""
        await migrate(pool, COMPONENT)
        return cls(pool)

    async def take(self, key: str, owner: str, until: float, now: float) -> bool:
        return await self._pool.fetchval(_TAKE, key, owner, until, now) is not None

    async def renew(self, key: str, owner: str, until: float, now: float) -> bool:
        return await self._pool.fetchval(_RENEW, key, owner, until, now) is not None

    async def holder(self, key: str) -> Holder | None:
        row = await self._pool.fetchrow(_HOLDER, key)
        return None if row is None else Holder(row["owner"], row["expires"])

    async def release(self, key: str, owner: str) -> None:
        await self._pool.execute(_RELEASE, key, owner)

    async def close(self) -> None:
        """Nothing to release: the pool stays open, it belongs to whoever gave it."""

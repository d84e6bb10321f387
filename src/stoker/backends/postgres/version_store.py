"""The PostgreSQL :class:`~stoker.cache.version_file.VersionStore`: the record of the
cache version for every node of one ``database_url`` (where the purge bus is), so a
node started later, or one that missed a bump, reads the version the others serve
whatever happened to the Redis tier (restarted empty, its keys evicted, failed over).

Lifecycle: ``versions = await PostgresVersionStore.open(pool)`` (applies the ``version``
migrations); the pool belongs to whoever gave it.

Invariants (beyond the port's): one row (``cache_version``), no row reading as the
initial state; every call is one statement on any connection of the pool.  A save is an
upsert whose update applies only when the stored version is not newer (``ON CONFLICT ...
DO UPDATE ... WHERE``), a bump an upsert computing the version after the greater of the
stored one and the bumper's own: PostgreSQL makes concurrent writers of the row wait on
it and judge its newest version, so the version never goes back and two bumps never
store the same version.
"""

from __future__ import annotations

from typing import Final

import asyncpg

from stoker.backends.postgres.connection import migrate
from stoker.cache.version_file import INITIAL_VERSION, VersionState, version_number

COMPONENT: Final = "version"
_LOAD: Final = "SELECT version, reclaimed FROM cache_version"
_SAVE: Final = """
INSERT INTO cache_version (version, reclaimed) VALUES ($1, $2)
ON CONFLICT (only_row) DO UPDATE SET version = excluded.version,
                                     reclaimed = excluded.reclaimed
WHERE cache_version.version <= excluded.version
"""
_BUMP: Final = """
INSERT INTO cache_version (version, reclaimed) VALUES (greatest($1::bigint, $2::bigint) + 1,
                                                       false)
ON CONFLICT (only_row) DO UPDATE SET version = greatest(cache_version.version, $1) + 1,
                                     reclaimed = false
RETURNING version
"""


class PostgresVersionStore:
    """The cache version's record on an asyncpg pool (see the module docstring)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    @classmethod
    async def open(cls, pool: asyncpg.Pool) -> PostgresVersionStore:
        """Apply the ``version`` migrations on ``pool`` and use it."""
        await migrate(pool, COMPONENT)
        return cls(pool)

    async def load(self) -> VersionState:
        row = await self._pool.fetchrow(_LOAD)
        return VersionState() if row is None else VersionState(str(row[0]), bool(row[1]))

    async def save(self, state: VersionState) -> None:
        await self._pool.execute(_SAVE, version_number(state.version), state.reclaimed)

    async def bump(self, past: str) -> VersionState:
        version = await self._pool.fetchval(_BUMP, version_number(past), int(INITIAL_VERSION))
        return VersionState(str(version), reclaimed=False)


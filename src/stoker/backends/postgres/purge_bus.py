"""The PostgreSQL :class:`~stoker.purge.bus.PurgeBus`: purges relayed between the
nodes of one cache, on several machines, through the database they share.

Lifecycle: ``bus = await PostgresPurgeBus.open(pool)`` (applies the ``bus`` migrations);
``await bus.close()`` leaves the pool open: it belongs to whoever gave it.

Ordering: a number is the ``purge_bus.number`` identity, drawn by an insert inside a
transaction that first takes one transaction-level advisory lock (:data:`PUBLISH_LOCK`).
A sequence alone hands numbers out in the order inserts *run*, not the order they
*commit*: publisher A draws 7, B draws 8 and commits first, a follower reads 8 and asks
``since(8)`` from then on, and never sees 7.  Under the lock a publish draws its number
only once the previous publish has committed (PostgreSQL releases a transaction's locks
after its commit is visible), so every row still to commit has a number above every row
a reader can see: a follower never skips one.  The lock rather than a counter row: the
number stays the identity, nothing but the row itself is written (no hot row to update
and vacuum on every publish), and readers, confirms and trims never wait for it.  A
publish rolled back after drawing its number leaves a gap, never filled later, which
skips nothing.  Advisory locks belong to the database, so buses in different schemas of
one database take turns too (each holds it for one insert).

Invariants (beyond the port's): every call but :meth:`PostgresPurgeBus.publish` is one
statement on any connection of the pool; a member's confirmed number is the greatest it
ever confirmed; :meth:`PostgresPurgeBus.trim` keeps the newest row, as the SQLite bus
does, so :meth:`PostgresPurgeBus.latest` never goes back; a row's values come from
:mod:`stoker.backends.bus_rows`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import asyncpg

from stoker.backends.bus_rows import publish_values, relayed
from stoker.backends.postgres.connection import lock_key, migrate
from stoker.purge.bus import Member, Relayed
from stoker.purge.list import PurgeMark

COMPONENT: Final = "bus"
PUBLISH_LOCK: Final = lock_key("bus.publish")
"""The advisory lock key every publish holds from drawing its number until it commits."""

_LOCK: Final = "SELECT pg_advisory_xact_lock($1)"
_PUBLISH: Final = """
INSERT INTO purge_bus (sender, published_at, purged_at, soft, keys, prefixes, tags,
                       everything, version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING number
"""
_SINCE: Final = """
SELECT number, sender, purged_at, soft, keys, prefixes, tags, everything, version
FROM purge_bus WHERE number > $1 ORDER BY number
"""
_LATEST: Final = "SELECT coalesce(max(number), 0) FROM purge_bus"
_CONFIRM: Final = """
INSERT INTO purge_members (name, confirmed, seen_at, figures) VALUES ($1, $2, $3, $4)
ON CONFLICT (name) DO UPDATE SET confirmed = greatest(purge_members.confirmed,
                                                      excluded.confirmed),
                                 figures = coalesce(excluded.figures, purge_members.figures),
                                 seen_at = excluded.seen_at
"""
_MEMBERS: Final = "SELECT name, confirmed, seen_at, figures FROM purge_members ORDER BY name"
_LEAVE: Final = "DELETE FROM purge_members WHERE name = $1"
_TRIM: Final = """
DELETE FROM purge_bus WHERE published_at < $1
AND number < (SELECT max(number) FROM purge_bus)
"""
"""The newest row stays: a member joining reads it as the number to start from."""


class PostgresPurgeBus:
    """The purge bus on an asyncpg pool (see the module docstring)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    @classmethod
    async def open(cls, pool: asyncpg.Pool) -> PostgresPurgeBus:
        """Apply the ``bus`` migrations on ``pool`` and use it."""
        await migrate(pool, COMPONENT)
        return cls(pool)

    async def publish(self, sender: str, mark: PurgeMark, version: str | None) -> int:
        """One transaction: the publish lock, then the insert (see the module's Ordering)."""
        async with self._pool.acquire() as conn, conn.transaction():
            await conn.execute(_LOCK, PUBLISH_LOCK)
            return int(await conn.fetchval(_PUBLISH, *publish_values(sender, mark, version)))

    async def since(self, number: int) -> Sequence[Relayed]:
        return [relayed(row) for row in await self._pool.fetch(_SINCE, number)]

    async def latest(self) -> int:
        return int(await self._pool.fetchval(_LATEST))

    async def confirm(self, member: str, number: int, now: float,
                      figures: str | None = None) -> None:
        await self._pool.execute(_CONFIRM, member, number, now, figures)

    async def members(self) -> Sequence[Member]:
        rows = await self._pool.fetch(_MEMBERS)
        return [Member(*row) for row in rows]

    async def leave(self, member: str) -> None:
        await self._pool.execute(_LEAVE, member)

    async def trim(self, before: float) -> None:
        await self._pool.execute(_TRIM, before)

    async def close(self) -> None:
        """Nothing to release: the pool stays open, it belongs to whoever gave it."""

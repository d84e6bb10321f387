"""The audit log of several nodes in PostgreSQL: append-only rows in ``audit_log``.

Lifecycle: ``store = await PostgresAuditStore.open(pool, clock)`` (applies the ``audit``
migrations); ``await store.close()`` leaves the pool open: it belongs to whoever gave it.
It satisfies :class:`stoker.purge.audit.AuditTrail`, as the SQLite store does; what gets
recorded (and how often) is decided by its callers (:mod:`stoker.admin.audit`).

Invariants:
- Rows are appended, stamped with the injected clock's ``now``, and deleted only by
  :meth:`PostgresAuditStore.prune` (the retention bound, oldest first, in chunks); every
  row is also logged on the ``stoker.audit`` logger.  What a row holds, and how many one read
  returns, is :mod:`stoker.backends.audit_records`, shared with SQLite's store.
- Newest first is the order of the ``id`` identity: the order the inserts ran, on
  whichever node.  Every call is one statement on any connection of the pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import asyncpg

from stoker.backends import audit_records
from stoker.backends.audit_records import COMPONENT
from stoker.backends.postgres.connection import migrate
from stoker.clock import Clock

_INSERT: Final = """
INSERT INTO audit_log (at, actor, action, target, count, outcome)
VALUES ($1, $2, $3, $4, $5, $6)
"""
_RECENT: Final = """
SELECT id, at, actor, action, target, count, outcome FROM audit_log
WHERE ($1::text IS NULL OR action = $1) AND ($2::bigint IS NULL OR id < $2)
ORDER BY id DESC LIMIT $3
"""

_DELETE_OLDER: Final = """
DELETE FROM audit_log WHERE id IN (
    SELECT id FROM audit_log WHERE at < $1 ORDER BY at LIMIT $2)
"""
_DELETE_BEYOND: Final = """
DELETE FROM audit_log WHERE id IN (
    SELECT id FROM audit_log WHERE id <= (
        SELECT id FROM audit_log ORDER BY id DESC OFFSET $1 LIMIT 1)
    ORDER BY id LIMIT $2)
"""


def deleted(status: str) -> int:
    """The rows a ``DELETE n`` command status names."""
    return int(status.rpartition(" ")[2])


class PostgresAuditStore:
    """Audit records on an asyncpg pool, appended and pruned.  See the module docstring."""

    def __init__(self, pool: asyncpg.Pool, clock: Clock) -> None:
        self._pool = pool
        self._clock = clock

    @classmethod
    async def open(cls, pool: asyncpg.Pool, clock: Clock) -> PostgresAuditStore:
        """Apply the ``audit`` migrations on ``pool`` and use it."""
        await migrate(pool, COMPONENT)
        return cls(pool, clock)

    async def record(self, *, actor: str, action: str, target: Mapping[str, Any],
                     count: int | None, outcome: str) -> None:
        """Append one record (and log it on ``stoker.audit``)."""
        values = audit_records.row(self._clock.now(), actor=actor, action=action,
                                   target=target, count=count, outcome=outcome)
        audit_records.log_row(values)
        await self.append(values)

    async def append(self, values: audit_records.Row) -> None:
        """Insert one record made already (logged by whoever made it)."""
        await self._pool.execute(_INSERT, *values)

    async def recent(self, limit: int = 100, *, action: str | None = None,
                     before: int | None = None) -> list[dict[str, Any]]:
        """The newest ``limit`` records (at least one, at most
        :data:`~stoker.backends.audit_records.MAX_LIMIT`), newest first; only ``action``'s,
        only those older than record ``before``, when given."""
        rows = await self._pool.fetch(_RECENT, action, before, audit_records.capped(limit))
        return [audit_records.record(row) for row in rows]

    async def prune(self, before: float, keep: int) -> int:
        """Delete the records made before ``before`` and all but the newest ``keep``; how
        many."""
        async def older(chunk: int) -> int:
            return deleted(await self._pool.execute(_DELETE_OLDER, before, chunk))

        async def beyond(chunk: int) -> int:
            return deleted(await self._pool.execute(_DELETE_BEYOND, keep, chunk))

        return await audit_records.in_chunks(older) + await audit_records.in_chunks(beyond)

    async def close(self) -> None:
        """Nothing to release: the pool stays open, it belongs to whoever gave it."""

"""The audit log's storage: append-only rows in ``data_dir/stoker.db``.

Lifecycle: ``store = await SqliteAuditStore.open(path, clock)``; ``await store.close()``.
It satisfies :class:`stoker.purge.audit.AuditTrail`; what gets recorded
(and how often) is decided by its callers (:mod:`stoker.admin.audit`).

Invariants:
- Rows are appended, stamped with the injected clock's ``now``, and deleted only by
  :meth:`SqliteAuditStore.prune` (the retention bound, oldest first, in chunks);
  every row is also logged on the ``stoker.audit`` logger.  What a row holds, and how
  many one read returns, is :mod:`stoker.backends.audit_records`, shared with
  PostgreSQL's store.
- Statements are the constants of :mod:`~stoker.backends.sqlite.audit_sql`
  and run on one dedicated thread owning the only connection, so the event
  loop never blocks on SQLite.  The schema comes from the ``audit`` migrations.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from pathlib import Path
from typing import Any

from stoker.backends import audit_records
from stoker.backends.audit_records import COMPONENT
from stoker.backends.sqlite import audit_sql
from stoker.backends.sqlite.connection import SqliteThread
from stoker.clock import Clock


class SqliteAuditStore:
    """Audit records, appended and pruned.  See the module docstring."""

    def __init__(self, path: Path, clock: Clock) -> None:
        self._clock = clock
        # an admin call waits for its record: at the loop's priority, not below it
        self._db = SqliteThread(path, COMPONENT, (COMPONENT,), background=False)

    @classmethod
    async def open(cls, path: Path, clock: Clock) -> SqliteAuditStore:
        """Connect and migrate."""
        store = cls(path, clock)
        await store._db.start()
        return store

    async def record(self, *, actor: str, action: str, target: Mapping[str, Any],
                     count: int | None, outcome: str) -> None:
        """Append one record (and log it on ``stoker.audit``)."""
        values = audit_records.row(self._clock.now(), actor=actor, action=action,
                                   target=target, count=count, outcome=outcome)
        audit_records.log_row(values)
        await self.append(values)

    async def append(self, values: audit_records.Row) -> None:
        """Insert one record made already (logged by whoever made it)."""
        await self._db.run(lambda conn: conn.execute(audit_sql.INSERT_RECORD, values))

    async def recent(self, limit: int = 100, *, action: str | None = None,
                     before: int | None = None) -> list[dict[str, Any]]:
        """The newest ``limit`` records (at least one, at most
        :data:`~stoker.backends.audit_records.MAX_LIMIT`), newest first; only ``action``'s,
        only those older than record ``before``, when given."""
        capped = audit_records.capped(limit)
        rows = await self._db.run(lambda conn: conn.execute(
            audit_sql.SELECT_RECENT, (action, before, capped)).fetchall())
        return [audit_records.record(row) for row in rows]

    async def prune(self, before: float, keep: int) -> int:
        """Delete the records made before ``before`` and all but the newest ``keep``; how
        many."""
        def older(chunk: int) -> Awaitable[int]:
            return self._db.run(lambda conn: conn.execute(
                audit_sql.DELETE_OLDER, (before, chunk)).rowcount)

        def beyond(chunk: int) -> Awaitable[int]:
            return self._db.run(lambda conn: conn.execute(
                audit_sql.DELETE_BEYOND, (keep, chunk)).rowcount)

        return await audit_records.in_chunks(older) + await audit_records.in_chunks(beyond)

    async def close(self) -> None:
        """Close the connection and the thread."""
        await self._db.close()

"""The audit log: who purged what, how much, when — in ``data_dir/stoker.db``.

Lifecycle: ``audit = await AuditLog.open(path, clock)``; ``await audit.close()``.

Invariants:
- One row per purge and per refused admin call (``outcome`` ``ok``,
  ``denied``, ``invalid`` or ``error``); rows are only ever appended.
- ``actor`` is ``anonymous``, ``token:<fingerprint>`` or
  ``purge-method:<address>`` — never a token.
- Statements are module constants with bound parameters and run on one
  dedicated thread owning the only connection, so the event loop never
  blocks on SQLite.  The schema comes from the ``audit`` migrations.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stoker.backends.sqlite.connection import SqliteThread
from stoker.clock import Clock

log = logging.getLogger("stoker.audit")

MIGRATIONS_PACKAGE = "stoker.admin.audit_migrations"
COMPONENT = "audit"
MAX_LIMIT = 1000

INSERT_RECORD = """
INSERT INTO audit_log (at, actor, action, target, count, outcome) VALUES (?, ?, ?, ?, ?, ?)
"""
SELECT_RECENT = """
SELECT id, at, actor, action, target, count, outcome FROM audit_log ORDER BY id DESC LIMIT ?
"""


class AuditLog:
    """Append-only audit records.  See the module docstring."""

    def __init__(self, path: Path, clock: Clock) -> None:
        self._clock = clock
        self._db = SqliteThread(path, COMPONENT, MIGRATIONS_PACKAGE)

    @classmethod
    async def open(cls, path: Path, clock: Clock) -> AuditLog:
        """Connect and migrate."""
        audit = cls(path, clock)
        await audit._db.start()
        return audit

    async def record(self, *, actor: str, action: str, target: Mapping[str, Any],
                     count: int | None, outcome: str) -> None:
        """Append one record (and log it on ``stoker.audit``)."""
        at = self._clock.now()
        text = json.dumps(dict(target), sort_keys=True)
        log.info("audit: %s %s %s -> %s (%s)", actor, action, text, outcome, count)
        await self._db.run(lambda conn: conn.execute(
            INSERT_RECORD, (at, actor, action, text, count, outcome)))

    async def recent(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` records, newest first."""
        limit = max(1, min(limit, MAX_LIMIT))
        rows = await self._db.run(lambda conn: conn.execute(SELECT_RECENT, (limit,)).fetchall())
        return [{"id": row[0], "at": row[1], "actor": row[2], "action": row[3],
                 "target": json.loads(row[4]), "count": row[5], "outcome": row[6]}
                for row in rows]

    async def close(self) -> None:
        """Close the connection and the thread."""
        await self._db.close()

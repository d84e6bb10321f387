"""An audit record as a row of the ``audit_log`` table, the same on every backend.

SQLite and PostgreSQL keep the same columns: ``id, at, actor, action, target, count,
outcome``.

Invariants: the target is kept as JSON text with sorted keys; a read asks for at least
one and at most :data:`MAX_LIMIT` records; every record written is also logged, once,
on the ``stoker.audit`` logger (:func:`log_row`).  Everything else here is pure.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

log = logging.getLogger("stoker.audit")

COMPONENT: Final = "audit"
"""The migrations component of the audit log, on every backend."""
MAX_LIMIT: Final = 1000
"""The most records one read returns."""

Row = tuple[float, str, str, str, int | None, str]
"""``at, actor, action, target, count, outcome``: what a record inserts."""


def row(at: float, *, actor: str, action: str, target: Mapping[str, Any], count: int | None,
        outcome: str) -> Row:
    """The inserted values of one record made at ``at``."""
    return at, actor, action, json.dumps(dict(target), sort_keys=True), count, outcome


def log_row(values: Row) -> None:
    """The ``stoker.audit`` line of one record."""
    _, actor, action, target, count, outcome = values
    log.info("audit: %s %s %s -> %s (%s)", actor, action, target, outcome, count)


def capped(limit: int) -> int:
    """``limit`` brought within ``1 .. MAX_LIMIT``."""
    return max(1, min(limit, MAX_LIMIT))


def record(stored: Sequence[Any]) -> dict[str, Any]:
    """A record as the stores' ``recent`` returns it, from its row read as
    ``id, at, actor, action, target, count, outcome``."""
    id_, at, actor, action, target, count, outcome = stored
    return {"id": id_, "at": at, "actor": actor, "action": action,
            "target": json.loads(target), "count": count, "outcome": outcome}

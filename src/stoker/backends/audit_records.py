"""An audit record as a row of the ``audit_log`` table, the same on every backend.

SQLite and PostgreSQL keep the same columns: ``id, at, actor, action, target, count,
outcome``.

Invariants: the target is kept as JSON text with sorted keys, bounded
(:func:`bounded_target`: a string beyond :data:`MAX_TEXT` characters and a list beyond
:data:`MAX_ITEMS` items are cut, saying how much was; a target still longer than
:data:`MAX_TARGET` is kept as its first characters), so what a client sends never makes a
row large; a read asks for at least one and at most :data:`MAX_LIMIT` records; a prune
deletes at most :data:`PRUNE_CHUNK` rows per statement (a store's other writers wait
for one chunk, not for the whole prune); every record written is also logged, once, on
the ``stoker.audit`` logger (:func:`log_row`).  Everything else here is pure.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

log = logging.getLogger("stoker.audit")

COMPONENT: Final = "audit"
"""The migrations component of the audit log, on every backend."""
MAX_LIMIT: Final = 1000
"""The most records one read returns."""
MAX_TEXT: Final = 512
"""Characters of one string of a target kept (a URL or path beyond is cut)."""
MAX_ITEMS: Final = 50
"""Items of one list of a target kept (a purge's URLs or tags beyond are counted)."""
MAX_TARGET: Final = 8192
"""Characters of a target's JSON kept when it is longer even with its parts bounded."""
PRUNE_CHUNK: Final = 5000
"""The most rows one prune statement deletes."""

Row = tuple[float, str, str, str, int | None, str]
"""``at, actor, action, target, count, outcome``: what a record inserts."""


def bounded(value: Any) -> Any:
    """``value`` with its strings and lists cut at :data:`MAX_TEXT` / :data:`MAX_ITEMS`
    (the cut says how much there was), at every depth."""
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else (
            f"{value[:MAX_TEXT]}… ({len(value)} characters)")
    if isinstance(value, Mapping):
        return {str(key): bounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        kept = [bounded(item) for item in value[:MAX_ITEMS]]
        return [*kept, f"… {len(value) - MAX_ITEMS} more"] if len(value) > MAX_ITEMS else kept
    return value


def bounded_target(target: Mapping[str, Any]) -> str:
    """The stored JSON text of ``target`` (see the module invariants): at most about
    :data:`MAX_TARGET` characters (twice that if every kept one must be escaped)."""
    text = json.dumps(bounded(target), sort_keys=True)
    if len(text) <= MAX_TARGET:
        return text
    return json.dumps({"truncated": text[:MAX_TARGET], "characters": len(text)})


def row(at: float, *, actor: str, action: str, target: Mapping[str, Any], count: int | None,
        outcome: str) -> Row:
    """The inserted values of one record made at ``at``."""
    return at, actor, action, bounded_target(target), count, outcome


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


async def in_chunks(delete: Callable[[int], Awaitable[int]]) -> int:
    """Run ``delete(PRUNE_CHUNK)`` (one statement deleting at most that many rows, how
    many it did) until a statement deletes fewer; how many rows in all."""
    total = 0
    while True:
        deleted = await delete(PRUNE_CHUNK)
        total += deleted
        if deleted < PRUNE_CHUNK:
            return total

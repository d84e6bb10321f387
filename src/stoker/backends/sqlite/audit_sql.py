"""SQL of the SQLite audit log (see :mod:`stoker.backends.sqlite.audit_store`).

Every statement is a constant with bound parameters; rows are only inserted
and read, never updated or deleted.
"""

from __future__ import annotations

from typing import Final

INSERT_RECORD: Final = """
INSERT INTO audit_log (at, actor, action, target, count, outcome) VALUES (?, ?, ?, ?, ?, ?)
"""
SELECT_RECENT: Final = """
SELECT id, at, actor, action, target, count, outcome FROM audit_log
WHERE (?1 IS NULL OR action = ?1) AND (?2 IS NULL OR id < ?2) ORDER BY id DESC LIMIT ?3
"""

"""SQL of the SQLite audit log (see :mod:`stoker.backends.sqlite.audit_store`).

Every statement is a constant with bound parameters; rows are inserted and read, never
updated, and deleted only by the retention prune (oldest first, a chunk at a time).
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
DELETE_OLDER: Final = """
DELETE FROM audit_log WHERE id IN (
    SELECT id FROM audit_log WHERE at < ?1 ORDER BY at LIMIT ?2)
"""
DELETE_BEYOND: Final = """
DELETE FROM audit_log WHERE id IN (
    SELECT id FROM audit_log WHERE id <= (
        SELECT id FROM audit_log ORDER BY id DESC LIMIT 1 OFFSET ?1)
    ORDER BY id LIMIT ?2)
"""

"""SQLite connections and numbered migrations for every embedded store.

Each store owns a migrations package directory of files named
``NNNN_description.sql``.  :func:`migrate` applies, in order, those not yet
recorded in ``schema_migrations`` for that store, each in one transaction.

Invariants: a connection from :func:`connect` is in WAL mode with a busy
timeout, so readers never block the writer and a second process waits
rather than failing; a migration is recorded in the same transaction that
applies it, so a crash never leaves one half-applied and recorded.
"""

from __future__ import annotations

import sqlite3
from importlib import resources
from pathlib import Path

BUSY_TIMEOUT_MS = 10_000

_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    component TEXT NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (component, version)
)
"""


def connect(path: Path | str, *, check_same_thread: bool = False) -> sqlite3.Connection:
    """Open ``path`` in WAL mode, autocommit (explicit ``BEGIN`` where needed)."""
    conn = sqlite3.connect(
        str(path), isolation_level=None, check_same_thread=check_same_thread, timeout=30
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def migration_files(package: str) -> list[tuple[int, str, str]]:
    """``(version, name, sql)`` for every ``NNNN_*.sql`` in ``package``, in order."""
    found = []
    for item in resources.files(package).iterdir():
        name = item.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), name, item.read_text(encoding="utf-8")))
    return sorted(found)


def migrate(conn: sqlite3.Connection, component: str, package: str) -> list[str]:
    """Apply pending migrations of ``component`` from ``package``; return the names applied."""
    conn.execute(_LEDGER)
    applied: list[str] = []
    for version, name, sql in migration_files(package):
        conn.execute("BEGIN IMMEDIATE")
        try:
            done = conn.execute(
                "SELECT 1 FROM schema_migrations WHERE component = ? AND version = ?",
                (component, version),
            ).fetchone()
            if done is None:
                for statement in _statements(sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (component, version, name) VALUES (?, ?, ?)",
                    (component, version, name),
                )
                applied.append(name)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return applied


def _statements(sql: str) -> list[str]:
    """Split a migration into complete statements (comments and literals may hold ``;``)."""
    statements: list[str] = []
    buffer = ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip() and not all(
        part.strip().startswith("--") or not part.strip() for part in buffer.splitlines()
    ):
        raise ValueError(f"migration ends with an incomplete statement: {buffer.strip()[:80]!r}")
    return statements

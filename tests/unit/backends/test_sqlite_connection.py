"""What :func:`stoker.backends.sqlite.connection.connect` checks of the SQLite it opens."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from stoker.backends.sqlite import connection


def test_connect_opens_wal_with_json_functions(tmp_path: Path) -> None:
    conn = connection.connect(tmp_path / "x.db")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT count(*) FROM json_each('[1, 2]')").fetchone() == (2,)
    finally:
        conn.close()


class NoJson:
    """A fault: a connection whose SQLite was built without the JSON functions."""

    closed = False

    def execute(self, sql: str) -> None:
        raise sqlite3.OperationalError("no such table: json_each")

    def close(self) -> None:
        self.closed = True


def test_a_sqlite_without_json_is_a_clear_error_naming_what_to_do() -> None:
    conn = NoJson()
    with pytest.raises(RuntimeError, match=r"JSON functions.*SQLite 3\.38 or later"):
        connection.require_json(conn)  # type: ignore[arg-type]
    assert conn.closed

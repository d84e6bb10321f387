"""What :func:`stoker.backends.sqlite.connection.connect` checks of the SQLite it opens,
and how its worker threads run."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from tests.priorities import linux_only, thread_priority

from stoker.backends.sqlite import connection
from stoker.backends.sqlite.connection import BACKGROUND_NICE, BUSY_TIMEOUT_MS, SqliteThread


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


@linux_only
async def test_sqlite_work_runs_below_the_event_loops_priority(tmp_path: Path) -> None:
    db = SqliteThread(tmp_path / "x.db", "cache", ("cache",))
    await db.start()
    try:
        worker = await db.run(lambda conn: thread_priority())
    finally:
        await db.close()
    assert worker == min(19, os.getpriority(os.PRIO_PROCESS, 0) + BACKGROUND_NICE)
    assert thread_priority() < worker  # the loop's


async def test_a_reader_thread_reads_what_the_writer_migrated(tmp_path: Path) -> None:
    writer = SqliteThread(tmp_path / "x.db", "cache", ("cache",))
    reader = SqliteThread(tmp_path / "x.db", "cache-lookups", background=False)
    await writer.start()
    await reader.start()
    try:
        await writer.run(lambda conn: conn.execute("CREATE TABLE t (x)"))
        await writer.run(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
        assert await reader.run(lambda conn: conn.execute("SELECT x FROM t").fetchall()) == [(1,)]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            await reader.run(lambda conn: conn.execute("INSERT INTO t VALUES (2)"))
        waits = await reader.run(lambda conn: conn.execute("PRAGMA busy_timeout").fetchone())
        assert waits == (BUSY_TIMEOUT_MS,)  # a worker thread may wait; the loop's reader not
    finally:
        await reader.close()
        await writer.close()


@linux_only
async def test_a_thread_a_client_waits_on_runs_at_the_loops_priority(tmp_path: Path) -> None:
    db = SqliteThread(tmp_path / "x.db", "cache-lookups", background=False)
    connection.connect(tmp_path / "x.db").close()  # the file exists, in WAL mode
    await db.start()
    try:
        worker = await db.run(lambda conn: thread_priority())
    finally:
        await db.close()
    assert worker == thread_priority()


class _Contended:
    """A connection whose switch to WAL another process holds up ``busy`` times."""

    def __init__(self, busy: int, error: str = "database is locked") -> None:
        self.busy, self.error, self.tries = busy, error, 0

    def execute(self, sql: str) -> None:
        assert sql == "PRAGMA journal_mode = WAL"
        self.tries += 1
        if self.tries <= self.busy:
            raise sqlite3.OperationalError(self.error)


def test_the_switch_to_wal_is_tried_again_while_another_process_makes_it() -> None:
    """SQLite does not wait for that lock (``database is locked`` at once): processes
    opening one new data_dir together, each switching it, try again."""
    contended = _Contended(busy=3)
    connection._into_wal(contended)  # type: ignore[arg-type]
    assert contended.tries == 4
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        connection._into_wal(_Contended(busy=1, error="disk I/O error"))  # type: ignore[arg-type]


def test_processes_opening_one_new_database_together_all_open_it(tmp_path: Path) -> None:
    import multiprocessing

    context = multiprocessing.get_context("fork")
    for round_ in range(5):
        path = tmp_path / f"{round_}.db"
        barrier = context.Barrier(6)
        processes = [context.Process(target=_open_at_once, args=(path, barrier))
                     for _ in range(6)]
        for process in processes:
            process.start()
        for process in processes:
            process.join(30)
        assert [process.exitcode for process in processes] == [0] * 6


def _open_at_once(path: Path, barrier: object) -> None:
    barrier.wait()  # type: ignore[attr-defined]
    connection.connect(path).execute("CREATE TABLE IF NOT EXISTS t (x)").connection.close()

"""SQLite connections and numbered migrations for every embedded store.

:data:`MIGRATIONS` is the one package of every component's migration files
(``NNNN_component_description.sql``, read by ``stoker.backends.migrations``);
:func:`migrate` applies, in order, those of one component not yet recorded in
``schema_migrations``, each in one transaction.

Invariants: a connection from :func:`connect` is in WAL mode with a busy
timeout, so readers never block the writer and a second process waits
rather than failing; a connection from :func:`connect_reader` cannot write
and never waits for a lock (busy is an error at once), so a caller on the
event loop is never held up by another connection; every write transaction
of a store is :func:`immediate`; a database file :func:`connect` opens is
created private (:data:`PRIVATE_FILE`, never readable by others for an
instant), and so are its ``-wal`` and ``-shm`` (SQLite gives them the database's
mode);
a migration is recorded in the same transaction that
applies it, so a crash never leaves one half-applied and recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from stoker.backends.migrations import Migration, migration_files

T = TypeVar("T")

BUSY_TIMEOUT_MS = 10_000
PRIVATE_FILE = 0o600
"""The mode of every database file: they hold the cache, the audit log and credentials."""
MIGRATIONS = "stoker.backends.sqlite.migrations"
"""The package holding every component's migrations."""
WAL_PAUSE = 0.005
"""Seconds between two tries of the switch to WAL while another process makes it."""
WAL_ATTEMPTS = int(BUSY_TIMEOUT_MS / 1000 / WAL_PAUSE)
"""Tries of the switch to WAL before giving up: ``busy_timeout``'s worth of pauses."""

_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    component TEXT NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (component, version)
)
"""


def make_private(path: Path | str) -> None:
    """Create the database file ``path`` with :data:`PRIVATE_FILE` if it is missing (its
    ``-wal`` and ``-shm`` then get that mode from SQLite).  An existing file's mode is left
    as it is (``stoker serve`` tightens ``data_dir``'s files, never ``stoker check``);
    ``:memory:`` and URIs are left alone."""
    name = str(path)
    if name != ":memory:" and not name.startswith("file:"):
        os.close(os.open(name, os.O_RDWR | os.O_CREAT, PRIVATE_FILE))


def connect(path: Path | str, *, check_same_thread: bool = False) -> sqlite3.Connection:
    """Open ``path`` (private, see :func:`make_private`) in WAL mode, autocommit (explicit
    ``BEGIN`` where needed)."""
    make_private(path)
    conn = sqlite3.connect(
        str(path), isolation_level=None, check_same_thread=check_same_thread, timeout=30
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    _into_wal(conn)
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    require_json(conn)
    return conn


def _into_wal(conn: sqlite3.Connection) -> None:
    """Put ``conn``'s database in WAL mode, trying again while another process does the
    same: the switch of a new file needs an exclusive lock, for which SQLite does not wait
    (``database is locked`` at once, whatever ``busy_timeout``), so processes opening one
    new ``data_dir`` together (the function cache's first calls) would fail.  Gives up
    after :data:`WAL_ATTEMPTS` tries :data:`WAL_PAUSE` apart (``busy_timeout``'s worth)."""
    for attempt in range(WAL_ATTEMPTS):
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or attempt == WAL_ATTEMPTS - 1:
                raise
            time.sleep(WAL_PAUSE)


def json_array(items: Iterable[Any]) -> str:
    """``items`` as one JSON array: the parameter a statement reads with ``json_each(?)``,
    so a batch of any size is one statement (one GIL hand-off on the store's thread)."""
    return json.dumps(list(items))


def require_json(conn: sqlite3.Connection) -> None:
    """Raise a :class:`RuntimeError` saying what to do when ``conn``'s SQLite lacks the
    JSON functions (built in since 3.38, an option before) the stores batch with."""
    try:
        conn.execute("SELECT value FROM json_each('[]')")
    except sqlite3.OperationalError as error:
        conn.close()
        raise RuntimeError(
            f"Stoker needs SQLite's JSON functions, missing from SQLite "
            f"{sqlite3.sqlite_version} ({error}). Use a Python built against SQLite 3.38 or "
            "later, or one compiled with JSON1.") from error


def connect_reader(path: Path | str, *, wait: bool = False) -> sqlite3.Connection:
    """Open ``path`` (already in WAL mode) read-only, autocommit, without a busy timeout
    (the event loop's reader: a busy read fails at once) or, with ``wait``, with the
    writers' (a worker thread's reader).

    Each statement reads the state committed when it starts and ends its read
    transaction once fully fetched.  The connection belongs to the thread that
    opened it (``check_same_thread``).
    """
    conn = sqlite3.connect(str(path), isolation_level=None,
                           timeout=BUSY_TIMEOUT_MS / 1000 if wait else 0)
    conn.execute("PRAGMA query_only = ON")
    return conn


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction that takes the write lock up front (``BEGIN IMMEDIATE``), or,
    inside a transaction already open on ``conn`` (a unit of work of
    :class:`~stoker.backends.sqlite.database.SqliteDatabase`), a savepoint of it.

    Two writers serialise at ``BEGIN`` (the busy timeout makes the second wait)
    instead of both reading and then failing to upgrade; any exception rolls back
    (the savepoint only: the enclosing transaction decides for itself).
    """
    nested = conn.in_transaction
    conn.execute("SAVEPOINT store_call" if nested else "BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK TO store_call" if nested else "ROLLBACK")
        if nested:
            conn.execute("RELEASE store_call")
        raise
    conn.execute("RELEASE store_call" if nested else "COMMIT")


def migrate(conn: sqlite3.Connection, component: str) -> list[str]:
    """Apply pending migrations of ``component``; return the names applied."""
    register_functions(conn)
    return apply_migrations(conn, component, migration_files(MIGRATIONS, component))


def register_functions(conn: sqlite3.Connection) -> None:
    """Make the Python functions the migrations' SQL calls (the package's
    ``SQL_FUNCTIONS``: ``name: (number of arguments, function)``) callable on ``conn``."""
    functions = getattr(importlib.import_module(MIGRATIONS), "SQL_FUNCTIONS", {})
    for name, (arity, function) in functions.items():
        conn.create_function(name, arity, function, deterministic=True)


def apply_migrations(
    conn: sqlite3.Connection, component: str, migrations: Sequence[Migration]
) -> list[str]:
    """Apply those of ``migrations`` not yet in the ledger, in order; return their names."""
    conn.execute(_LEDGER)
    applied: list[str] = []
    for version, name, sql in migrations:
        with immediate(conn):
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


BACKGROUND_NICE = 10
"""How much lower than the process the worker threads' scheduling priority is (Linux nice):
a CPU share of ~10 % against the event loop when both want the core."""


def yield_to_the_loop() -> None:
    """Lower the calling thread's scheduling priority by :data:`BACKGROUND_NICE` (Linux,
    where a thread is a task of its own; elsewhere nothing): background SQLite work (L2
    writes, a purge's deletes, eviction) then runs on what the event loop leaves idle
    instead of taking half a shared core from the requests, and still gets a share of
    a core the loop keeps busy."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(),
                           os.getpriority(os.PRIO_PROCESS, 0) + BACKGROUND_NICE)


class SqliteThread:
    """One SQLite connection owned by one worker thread; every call runs there.

    Invariants: the connection is created, migrated, used and closed on the
    same thread, so the event loop never blocks on SQLite and no two calls run
    at once; :meth:`start` is idempotent and leaves nothing running if it
    fails; a call after :meth:`close` raises ``RuntimeError``.

    ``components`` are those whose migrations are applied on connecting, in order; none
    opens the database read-only (:func:`connect_reader`), for a thread that reads what
    another thread's connection migrated and writes.  A ``background`` thread runs below
    the event loop (:func:`yield_to_the_loop`); one whose calls a client waits on (a
    purge's lookups, an admin change's audit record) runs at the loop's priority.
    """

    def __init__(self, path: Path, name: str, components: Sequence[str] = (), *,
                 row_factory: type | None = None, background: bool = True) -> None:
        self.path = path
        self._component = name
        self._components = tuple(components)
        self._row_factory = row_factory
        self._background = background
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None

    async def start(self) -> None:
        """Start the thread, connect and apply pending migrations."""
        if self._executor is not None:
            return
        executor = ThreadPoolExecutor(1, thread_name_prefix=f"stoker-{self._component}-sqlite",
                                      initializer=yield_to_the_loop if self._background else None)
        try:
            await asyncio.get_running_loop().run_in_executor(executor, self._connect)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        self._executor = executor

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(connection)`` on the thread and return its result."""
        if self._executor is None:
            raise RuntimeError(
                f"SQLite {self._component} store {self.path} used before start() or after close()")
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._call, work)

    async def close(self) -> None:
        """Close the connection and stop the thread (idempotent)."""
        if self._executor is None:
            return
        await self.run(lambda conn: conn.close())
        self._executor.shutdown(wait=True)
        self._executor = None
        self._conn = None

    def _connect(self) -> None:
        if not self._components:
            conn = connect_reader(self.path, wait=True)
        else:
            conn = connect(self.path)
            for component in self._components:
                migrate(conn, component)
        if self._row_factory is not None:
            conn.row_factory = self._row_factory
        self._conn = conn

    def _call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        if self._conn is None:
            raise RuntimeError(f"SQLite {self._component} store {self.path} has no connection")
        return work(self._conn)

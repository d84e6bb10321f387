"""A database upgraded from any older schema version ends up with exactly the
schema a fresh database gets, on SQLite and PostgreSQL, with its rows kept (on SQLite:
every table that held a row before the upgrade still holds one).

For every store with numbered migrations and every version ``k``, the
migrations up to ``k`` are replayed one file at a time, with a row written to
every table after each step (so a migration that cannot run on a table holding
data fails here), then the store's own open path migrates the rest. Its schema
(tables, columns, indexes, constraints, triggers, functions) must equal the one
a fresh database gets from that open path alone.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
from tests.job_backends import PG_URL, pg_schema

from stoker.backends import audit_records
from stoker.backends.migrations import Migration, migration_files
from stoker.backends.postgres import connection as pg
from stoker.backends.postgres import database as pg_database
from stoker.backends.postgres import purge_bus as pg_bus
from stoker.backends.postgres import version_store as pg_version
from stoker.backends.sqlite import audit_store as audit
from stoker.backends.sqlite import cache_store
from stoker.backends.sqlite import database as sqlite_database
from stoker.backends.sqlite.connection import (
    MIGRATIONS,
    SqliteThread,
    apply_migrations,
    connect,
    register_functions,
)

SQLITE_STORES = (cache_store.COMPONENT, audit.COMPONENT, *sqlite_database.COMPONENTS)
PG_STORES = (*pg_database.COMPONENTS, pg_bus.COMPONENT, audit_records.COMPONENT,
             pg_version.COMPONENT)
"""The warm stores' components, and those opened on their own: the bus (purge bus, fetch
leases), the audit log and the cache version's record."""


def upgrade_cases(files: dict[str, list[Migration]]) -> list[tuple[str, int]]:
    """``(component, k)``: start from the first ``k`` migrations, for every ``k``."""
    return [(component, k) for component, found in files.items()
            for k in range(1, len(found) + 1)]


SQLITE_CASES = upgrade_cases(
    {component: migration_files(MIGRATIONS, component) for component in SQLITE_STORES})
PG_CASES = upgrade_cases(
    {component: migration_files(pg.MIGRATIONS, component) for component in PG_STORES})


# --- SQLite -------------------------------------------------------------------------

def sqlite_schema(path: Path) -> list[tuple[object, ...]]:
    conn = connect(path)
    try:
        objects = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master"
            " WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name").fetchall()
        columns = [
            (table, *column)
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                                         " AND name NOT LIKE 'sqlite_%' ORDER BY name")
            for column in conn.execute(f'PRAGMA table_xinfo("{table}")')
        ]
        return objects + columns
    finally:
        conn.close()


_SQLITE_VALUES = {"INT": 1, "REA": 1.0, "BLO": b"x"}


def sqlite_fill(conn: sqlite3.Connection) -> None:
    """A row in every table: a value for each NOT NULL column without a default
    (ignored where an earlier step's row already holds the same key)."""
    tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                          " AND name NOT LIKE 'sqlite_%' AND name != 'schema_migrations'"
                          " ORDER BY rowid").fetchall()
    for (table,) in tables:
        columns = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
        rowid_key = sum(1 for column in columns if column[5]) == 1  # else a composite key
        needed = {
            name: _SQLITE_VALUES.get(str(kind).upper()[:3], "x")
            for _, name, kind, notnull, default, pk in columns
            if notnull and default is None
            and not (pk and rowid_key and str(kind).upper() == "INTEGER")
        }
        names = ", ".join(f'"{name}"' for name in needed)
        marks = ", ".join("?" for _ in needed)
        conn.execute(f'INSERT OR IGNORE INTO "{table}" ({names}) VALUES ({marks})',
                     list(needed.values()))


def sqlite_counts(path: Path) -> dict[str, int]:
    conn = connect(path)
    try:
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                              " AND name NOT LIKE 'sqlite_%' AND name != 'schema_migrations'")
        return {table: conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
                for (table,) in tables.fetchall()}
    finally:
        conn.close()


async def sqlite_open(path: Path, component: str) -> None:
    """The store's own open path: start (connect + migrate) and close."""
    db = SqliteThread(path, component, (component,))
    await db.start()
    await db.close()


@pytest.mark.parametrize(("component", "k"), SQLITE_CASES)
async def test_sqlite_upgrade_from_each_version_equals_fresh_schema(
        tmp_path: Path, component: str, k: int) -> None:
    fresh, upgraded = tmp_path / "fresh.db", tmp_path / "upgraded.db"
    await sqlite_open(fresh, component)
    conn = connect(upgraded)
    register_functions(conn)  # as the open path does
    try:
        for migration in migration_files(MIGRATIONS, component)[:k]:
            assert apply_migrations(conn, component, [migration]) == [migration.name]
            sqlite_fill(conn)
    finally:
        conn.close()
    filled = set(sqlite_counts(upgraded))
    await sqlite_open(upgraded, component)
    assert sqlite_schema(upgraded) == sqlite_schema(fresh)
    kept = sqlite_counts(upgraded)  # a table a later migration creates starts empty
    assert all(kept[table] >= 1 for table in filled)


# --- PostgreSQL -----------------------------------------------------------------------

_PG_DUMP = {
    "columns": """
        SELECT table_name, column_name, ordinal_position, data_type, is_nullable,
               column_default, is_identity
        FROM information_schema.columns WHERE table_schema = $1
        ORDER BY table_name, ordinal_position""",
    "constraints": """
        SELECT c.relname, k.conname, pg_get_constraintdef(k.oid)
        FROM pg_constraint AS k JOIN pg_class AS c ON c.oid = k.conrelid
        WHERE c.relnamespace = $1::regnamespace ORDER BY 1, 2""",
    "indexes": """
        SELECT tablename, indexname, indexdef FROM pg_indexes
        WHERE schemaname = $1 ORDER BY 1, 2""",
    "triggers": """
        SELECT c.relname, t.tgname, pg_get_triggerdef(t.oid)
        FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid
        WHERE c.relnamespace = $1::regnamespace AND NOT t.tgisinternal ORDER BY 1, 2""",
    "functions": """
        SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc AS p
        WHERE p.pronamespace = $1::regnamespace ORDER BY 1""",
}

_PG_VALUES = {"text": "'x'", "jsonb": "'{}'", "boolean": "false"}


async def pg_dump(conn: asyncpg.Connection, schema: str) -> dict[str, list[tuple[object, ...]]]:
    """The catalogue of ``schema`` (``conn``'s search path, so names print unqualified),
    with the schema's own name replaced by ``<schema>``."""
    dump = {}
    for part, query in _PG_DUMP.items():
        rows = await conn.fetch(query, schema)
        dump[part] = [
            tuple(value.replace(schema, "<schema>") if isinstance(value, str) else value
                  for value in row)
            for row in rows
        ]
    return dump


async def pg_fill(conn: asyncpg.Connection, schema: str) -> list[str]:
    """A row in every table: a value for each NOT NULL column without a default
    (ignored where an earlier step's row already holds the same key); the tables."""
    tables = await conn.fetch(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = $1"
        " AND table_name != 'schema_migrations'", schema)
    for (table,) in tables:
        needed = await conn.fetch(
            "SELECT column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = $1 AND table_name = $2 AND is_nullable = 'NO'"
            " AND column_default IS NULL AND is_identity = 'NO'", schema, table)
        names = ", ".join(f'"{name}"' for name, _ in needed)
        values = ", ".join(_PG_VALUES.get(kind, "1") for _, kind in needed)
        await conn.execute(f'INSERT INTO {schema}."{table}" ({names}) VALUES ({values})'
                           " ON CONFLICT DO NOTHING")
    return [table for (table,) in tables]


@pytest.fixture
def two_schemas() -> Iterator[tuple[str, str]]:
    with pg_schema(migrated=False) as fresh, pg_schema(migrated=False) as upgraded:
        yield fresh, upgraded


@pytest.mark.parametrize(("component", "k"), PG_CASES)
async def test_postgres_upgrade_from_each_version_equals_fresh_schema(
        two_schemas: tuple[str, str], component: str, k: int) -> None:
    fresh, upgraded = two_schemas
    files = migration_files(pg.MIGRATIONS, component)
    fresh_pool = await pg.create_pool(PG_URL, schema=fresh, min_size=1, max_size=1)
    upgraded_pool = await pg.create_pool(PG_URL, schema=upgraded, min_size=1, max_size=1)
    try:
        await pg.migrate(fresh_pool, component)
        for migration in files[:k]:
            assert await pg.apply_migrations(upgraded_pool, component, [migration]) == [
                migration.name]
            async with upgraded_pool.acquire() as conn:
                filled = await pg_fill(conn, upgraded)
        await pg.migrate(upgraded_pool, component)
        async with upgraded_pool.acquire() as conn, fresh_pool.acquire() as fresh_conn:
            assert await pg_dump(conn, upgraded) == await pg_dump(fresh_conn, fresh)
            for table in filled:  # a table a later migration creates starts empty
                assert await conn.fetchval(f'SELECT count(*) FROM "{table}"') >= 1
    finally:
        await fresh_pool.close()
        await upgraded_pool.close()

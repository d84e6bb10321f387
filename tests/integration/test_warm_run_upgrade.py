"""A warm runs database from before ``not_stored`` (migration 0001 only, holding runs and
URLs in every state) upgrades when its store opens, on SQLite and PostgreSQL: every row
is kept as it was (no page not stored, no detail), the URL state index is there, and
the upgraded runs take ``not_stored`` results with their reasons."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.job_backends import BACKENDS, PG_URL, pg_schema

from stoker.backends.migrations import migration_files
from stoker.backends.postgres import connection as pg
from stoker.backends.postgres.database import PostgresDatabase
from stoker.backends.postgres.run_store import PostgresRunStore
from stoker.backends.sqlite.connection import MIGRATIONS, apply_migrations, connect
from stoker.backends.sqlite.database import SqliteDatabase
from stoker.backends.sqlite.run_store import SqliteRunStore
from stoker.warm.run import Counts
from stoker.warm.run_store import RunStore

NOW = 1_700_000_000.0
RUNS = [  # (reason, scope, phase, started_at, total, warmed, failed, stopgap_pending)
    ("manual", "site", "done", NOW, 2, 1, 1, 0),
    ("purge", "urls", "warm", NOW + 10, 3, 1, 0, 1),
]
URLS = [  # (run_id, url, state, visit, revisits)
    (1, "/a", "warmed", 1, 0), (1, "/b", "failed", 1, 0),
    (2, "/a", "warmed", 1, 0), (2, "/b", "stopgap", 1, 0), (2, "/c", "queued", 0, 0),
]
INSERT_RUN = ("INSERT INTO warm_runs (reason, scope, phase, started_at, total, warmed, failed,"
              " stopgap_pending) VALUES ({})")
INSERT_URL = "INSERT INTO warm_run_urls (run_id, url, state, visit, revisits) VALUES ({})"


async def sqlite_at_0001(path: Path) -> RunStore:
    conn = connect(path)
    try:
        first = migration_files(MIGRATIONS, "runs")[:1]
        assert apply_migrations(conn, "runs", first) == ["0001_runs.sql"]
        conn.executemany(INSERT_RUN.format(", ".join("?" * 8)), RUNS)
        conn.executemany(INSERT_URL.format(", ".join("?" * 5)), URLS)
    finally:
        conn.close()
    return SqliteRunStore(await SqliteDatabase.open(path), owns=True)


async def sqlite_index(path: Path) -> list[str]:
    conn = connect(path)
    try:
        return [row[1] for row in conn.execute("PRAGMA index_list(warm_run_urls)")
                if not row[1].startswith("sqlite_")]
    finally:
        conn.close()


@pytest.fixture(params=BACKENDS)
async def upgraded(request: pytest.FixtureRequest,
                   tmp_path: Path) -> AsyncIterator[tuple[RunStore, list[str]]]:
    """The store opened on a 0001 database holding :data:`RUNS` and :data:`URLS`, and the
    indexes of ``warm_run_urls`` after the upgrade."""
    if request.param == "sqlite":
        store = await sqlite_at_0001(tmp_path / "runs.db")
        try:
            yield store, await sqlite_index(tmp_path / "runs.db")
        finally:
            await store.aclose()
        return
    with pg_schema(migrated=False) as schema:
        pool = await pg.create_pool(PG_URL, schema=schema, min_size=1, max_size=2)
        first = migration_files(pg.MIGRATIONS, "runs")[:1]
        assert await pg.apply_migrations(pool, "runs", first) == ["0001_runs.sql"]
        await pool.executemany(INSERT_RUN.format(", ".join(f"${n}" for n in range(1, 9))), RUNS)
        await pool.executemany(INSERT_URL.format(", ".join(f"${n}" for n in range(1, 6))), URLS)
        store = PostgresRunStore(await PostgresDatabase.open(pool), owns=True)
        try:
            indexes = [row["indexname"] for row in await pool.fetch(
                "SELECT indexname FROM pg_indexes WHERE schemaname = $1"
                " AND tablename = 'warm_run_urls' AND indexname NOT LIKE '%pkey'", schema)]
            yield store, indexes
        finally:
            await store.aclose()


async def test_an_upgraded_database_keeps_its_runs_and_takes_pages_not_stored(
        upgraded: tuple[RunStore, list[str]]) -> None:
    store, indexes = upgraded
    assert indexes == ["warm_run_urls_state_idx"]
    done, going = await store.get(1), await store.get(2)
    assert done is not None and going is not None
    assert (done.phase, done.counts) == ("done", Counts(total=2, warmed=1, failed=1))
    assert (going.phase, going.counts) == ("warm", Counts(total=3, warmed=1, stopgap_pending=1))
    assert await store.active() == going
    assert [await store.urls(1, "warmed"), await store.urls(1, "failed")] == [["/a"], ["/b"]]
    assert await store.urls(2, "stopgap") == ["/b"]
    assert await store.not_stored_reasons(1) == {}
    assert await store.skipped_reasons(1) == {}  # runs from before the reasons name none
    # the rows kept their visit numbers: a stale visit is ignored, the current one counts
    assert not (await store.record(2, "/b", 0, "not_stored", NOW, detail="private")).counted
    assert (await store.record(2, "/b", 1, "not_stored", NOW, detail="private")).counted
    last = await store.record(2, "/c", 0, "not_stored", NOW + 1, detail="set-cookie")
    assert last.run.counts == Counts(total=3, warmed=1, not_stored=2)
    assert last.run.phase == "done"
    assert await store.not_stored_reasons(2) == {"private": 1, "set-cookie": 1}
    assert await store.urls(2, "not_stored") == ["/b", "/c"]

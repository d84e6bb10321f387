"""The ``HitStatsStore`` contract: one suite, run against SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from tests.job_backends import BACKENDS, PG_URL, pg_schema

from stoker.backends.postgres.connection import create_pool
from stoker.backends.postgres.database import PostgresDatabase
from stoker.backends.postgres.hit_stats import PostgresHitStatsStore
from stoker.backends.sqlite.database import SqliteDatabase
from stoker.backends.sqlite.hit_stats import SqliteHitStatsStore
from stoker.cache.hits import MAX_SEEN_ORIGINS, MAX_URL_LENGTH, HitStatsStore, SeenOrigin

NOW = 1_700_000_000.0
Opener = Callable[[], Awaitable[HitStatsStore]]


@pytest.fixture(scope="session")
def pg_hits_schema() -> Iterator[str]:
    with pg_schema(migrated=False) as schema:
        yield schema


@pytest.fixture(params=BACKENDS)
async def opener(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    """Opens another store on the same database (a second process or node)."""
    if request.param == "sqlite":
        async def open_sqlite() -> HitStatsStore:
            return SqliteHitStatsStore(await SqliteDatabase.open(tmp_path / "stoker.db"),
                                       owns=True)
        yield open_sqlite
        return
    schema = request.getfixturevalue("pg_hits_schema")

    async def open_postgres() -> HitStatsStore:
        pool = await create_pool(PG_URL, schema=schema, min_size=1, max_size=4)
        return PostgresHitStatsStore(await PostgresDatabase.open(pool), owns=True)
    first = await open_postgres()
    await first.prune(float("inf"))  # the schema is shared by this session's tests
    await first.close()
    yield open_postgres


@pytest.fixture
async def store(opener: Opener) -> AsyncIterator[HitStatsStore]:
    opened = await opener()
    yield opened
    await opened.close()


async def test_add_sums_hits_and_misses_and_top_orders_by_visits(store: HitStatsStore) -> None:
    await store.add({"/a": (1, 1), "/b": (5, 0), "/c": (0, 3)}, NOW)
    assert await store.top(10) == [("/b", 5), ("/c", 3), ("/a", 2)]
    await store.add({"/a": (3, 1)}, NOW + 60)
    assert await store.top(10) == [("/a", 6), ("/b", 5), ("/c", 3)]


async def test_top_breaks_ties_bytewise_and_honours_the_limit(store: HitStatsStore) -> None:
    await store.add({"/b": (1, 0), "/B": (1, 0), "/a": (1, 0), "/é": (1, 0), "/z": (9, 0)}, NOW)
    assert await store.top(10) == [("/z", 9), ("/B", 1), ("/a", 1), ("/b", 1), ("/é", 1)]
    assert await store.top(2) == [("/z", 9), ("/B", 1)]
    assert await store.top(0) == []


async def test_popularity_of_known_and_unknown_urls(store: HitStatsStore) -> None:
    await store.add({"/a": (2, 1), "/b": (0, 4)}, NOW)
    assert await store.popularity(["/b", "/nope", "/a", "/b"]) == {"/a": 3, "/b": 4, "/nope": 0}
    assert await store.popularity([]) == {}


async def test_popularity_of_a_whole_sitemap(store: HitStatsStore) -> None:
    await store.add({f"/p{n}": (n, 0) for n in range(1, 5001)}, NOW)
    urls = [f"/p{n}" for n in range(0, 60_000)]
    popularity = await store.popularity(urls)
    assert len(popularity) == 60_000
    assert sum(popularity.values()) == sum(range(1, 5001))


async def test_urls_a_database_cannot_index_are_skipped(store: HitStatsStore) -> None:
    too_long = "/" + "x" * MAX_URL_LENGTH
    await store.add({too_long: (1, 0), "/nul\x00": (1, 0), "/ok": (1, 0)}, NOW)
    assert await store.top(10) == [("/ok", 1)]
    assert await store.popularity([too_long, "/nul\x00"]) == {too_long: 0, "/nul\x00": 0}


async def test_an_empty_flush_changes_nothing(store: HitStatsStore) -> None:
    await store.add({}, NOW)
    assert await store.top(10) == []


async def test_prune_forgets_urls_not_seen_since(store: HitStatsStore) -> None:
    await store.add({"/old": (1, 0), "/kept": (1, 0)}, NOW)
    await store.add({"/kept": (1, 0), "/new": (1, 0)}, NOW + 100)
    await store.add({"/kept": (0, 1)}, NOW + 50)  # an older flush does not move last seen back
    assert await store.prune(NOW + 100) == 1
    assert await store.top(10) == [("/kept", 3), ("/new", 1)]
    assert await store.prune(NOW + 100) == 0


async def test_sums_survive_reopening(store: HitStatsStore, opener: Opener) -> None:
    await store.add({"/a": (2, 0)}, NOW)
    await store.close()
    reopened = await opener()
    try:
        assert await reopened.top(1) == [("/a", 2)]
    finally:
        await reopened.close()


async def test_concurrent_flushes_from_two_processes_add_up(
        store: HitStatsStore, opener: Opener) -> None:
    other = await opener()
    urls = [f"/p{n}" for n in range(200)]
    forward = {url: (1, 0) for url in urls}
    backward = {url: (0, 1) for url in reversed(urls)}
    try:
        await asyncio.gather(*(
            (store if n % 2 else other).add(forward if n % 3 else backward, NOW + n)
            for n in range(20)))
    finally:
        await other.close()
    popularity = await store.popularity(urls)
    assert set(popularity.values()) == {20}


async def test_origins_add_up_keep_the_latest_seen_and_the_most_visited(
        store: HitStatsStore) -> None:
    await store.add_origins({"https://a.test": 5, "": 2}, NOW)
    await store.add_origins({"https://a.test": 1, "http://a.test": 3}, NOW + 60)
    assert await store.origins() == [SeenOrigin("https://a.test", 6, NOW + 60),
                                     SeenOrigin("http://a.test", 3, NOW + 60),
                                     SeenOrigin("", 2, NOW)]
    await store.add_origins({f"https://h{n:02}.test": 100 + n
                             for n in range(MAX_SEEN_ORIGINS)}, NOW + 120)
    kept = await store.origins()
    assert len(kept) == MAX_SEEN_ORIGINS
    assert {row.origin for row in kept} == {f"https://h{n:02}.test"
                                            for n in range(MAX_SEEN_ORIGINS)}


async def test_prune_forgets_origins_not_seen_since(store: HitStatsStore) -> None:
    await store.add_origins({"https://old.test": 9}, NOW)
    await store.add_origins({"https://new.test": 1}, NOW + 100)
    await store.prune(NOW + 50)
    assert [row.origin for row in await store.origins()] == ["https://new.test"]

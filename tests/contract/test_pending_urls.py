"""The PendingUrls contract, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from tests.job_backends import BACKENDS, PG_URL, fresh_target

from stoker.backends.postgres.connection import create_pool
from stoker.backends.postgres.database import PostgresDatabase
from stoker.backends.postgres.pending_urls import PostgresPendingUrls
from stoker.backends.sqlite.database import SqliteDatabase
from stoker.backends.sqlite.pending_urls import SqlitePendingUrls
from stoker.warm.pending import PendingUrls


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def target(backend: str, tmp_path: Path) -> Iterator[str]:
    with fresh_target(backend, tmp_path) as place:
        yield place


async def open_pending(backend: str, target: str) -> PendingUrls:
    if backend == "sqlite":
        return SqlitePendingUrls(await SqliteDatabase.open(Path(target)), owns=True)
    pool = await create_pool(PG_URL, schema=target, min_size=1, max_size=4)
    return PostgresPendingUrls(await PostgresDatabase.open(pool), owns=True)


@pytest.fixture
async def pending(backend: str, target: str) -> AsyncIterator[PendingUrls]:
    store = await open_pending(backend, target)
    yield store
    await store.aclose()


async def test_a_url_is_pending_once_and_keeps_its_first_time(pending: PendingUrls) -> None:
    assert await pending.add(["https://s/a", "https://s/b"], 10.0) == 2
    assert await pending.add(["https://s/a", "https://s/c"], 20.0) == 1
    assert await pending.count() == 3
    assert await pending.add(["https://s/c"], 1.0) == 0  # c keeps 20.0
    assert await pending.take() == ["https://s/a", "https://s/b", "https://s/c"]
    assert await pending.count() == 0 and await pending.take() == []


async def test_take_is_oldest_first_and_bounded(pending: PendingUrls) -> None:
    await pending.add(["https://s/late"], 30.0)
    await pending.add(["https://s/early"], 10.0)
    assert await pending.oldest(1) == ["https://s/early"]  # looked at, left pending
    assert await pending.oldest(5) == ["https://s/early", "https://s/late"]
    assert await pending.oldest(0) == []
    assert await pending.take(1) == ["https://s/early"]
    assert await pending.take(5) == ["https://s/late"]


async def test_pending_urls_survive_a_restart(backend: str, target: str) -> None:
    first = await open_pending(backend, target)
    await first.add(["https://s/kept"], 1.0)
    await first.aclose()
    second = await open_pending(backend, target)
    try:
        assert await second.take() == ["https://s/kept"]
    finally:
        await second.aclose()


async def test_concurrent_takers_never_share_a_url(backend: str, target: str) -> None:
    stores = [await open_pending(backend, target) for _ in range(3)]
    try:
        await stores[0].add([f"https://s/{n}" for n in range(300)], 1.0)
        taken = await asyncio.gather(*(store.take(40) for store in stores for _ in range(4)))
        flat = [url for batch in taken for url in batch]
        assert len(flat) == len(set(flat)) == 300
    finally:
        for store in stores:
            await store.aclose()

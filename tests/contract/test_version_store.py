"""The ``VersionStore`` contract, on ``data_dir`` (:class:`VersionFile`) and PostgreSQL
(:class:`PostgresVersionStore`, one schema), each store opened as a process of its own
would (its own object, or its own pool, on one place): versions only grow."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import asyncpg
import pytest
from tests.job_backends import PG_URL, pg_schema

from stoker.backends.postgres.connection import create_pool
from stoker.backends.postgres.version_store import PostgresVersionStore
from stoker.cache.version_file import VersionFile, VersionState, VersionStore

Opener = Callable[[], Awaitable[VersionStore]]


@pytest.fixture(params=("file", "postgres"))
async def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    """Opens another store on the one place of this test."""
    if request.param == "file":
        async def on_file() -> VersionStore:
            return VersionFile(tmp_path)

        yield on_file
        return
    pools: list[asyncpg.Pool] = []
    with pg_schema(migrated=False) as schema:
        async def on_postgres() -> VersionStore:
            pools.append(await create_pool(PG_URL, schema=schema, min_size=1, max_size=4))
            return await PostgresVersionStore.open(pools[-1])

        try:
            yield on_postgres
        finally:
            for pool in pools:
                await pool.close()


async def test_nothing_stored_reads_as_version_1_reclaimed(open_store: Opener) -> None:
    assert await (await open_store()).load() == VersionState("1", reclaimed=True)


async def test_a_saved_state_reads_back_from_another_store(open_store: Opener) -> None:
    await (await open_store()).save(VersionState("7", reclaimed=False))
    assert await (await open_store()).load() == VersionState("7", reclaimed=False)


async def test_a_save_never_takes_the_version_back(open_store: Opener) -> None:
    store = await open_store()
    await store.save(VersionState("5", reclaimed=False))
    await store.save(VersionState("4", reclaimed=True))
    assert await store.load() == VersionState("5", reclaimed=False)
    await store.save(VersionState("5", reclaimed=True))  # the reclaim of 5 is done
    assert await store.load() == VersionState("5", reclaimed=True)


async def test_a_bump_goes_above_both_the_stored_version_and_the_bumpers(
        open_store: Opener) -> None:
    store = await open_store()
    assert await store.bump("1") == VersionState("2", reclaimed=False)
    assert await store.bump("1") == VersionState("3", reclaimed=False)  # a bumper behind
    assert await store.bump("9") == VersionState("10", reclaimed=False)  # a record behind
    assert await (await open_store()).load() == VersionState("10", reclaimed=False)


async def test_a_bump_before_anything_is_stored_starts_above_version_1(
        open_store: Opener) -> None:
    assert (await (await open_store()).bump("0")).version == "2"


async def test_concurrent_bumps_by_many_stores_each_get_a_version_of_their_own(
        open_store: Opener) -> None:
    stores = [await open_store() for _ in range(4)]
    bumps = await asyncio.gather(*(store.bump("1") for store in stores for _ in range(5)))
    versions = sorted(int(state.version) for state in bumps)
    assert versions == list(range(2, 22))
    assert await stores[0].load() == VersionState("21", reclaimed=False)

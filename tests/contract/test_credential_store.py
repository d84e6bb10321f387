"""The CredentialStore contract, on SQLite and PostgreSQL (through the warm stores, as
``stoker serve`` opens them): values kept across a reopen, never listed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.job_backends import BACKENDS, PG_URL, fresh_target

from stoker.backends.postgres.connection import create_pool
from stoker.backends.warm_stores import WarmStores, warm_stores_on_file, warm_stores_on_pool
from stoker.clock import FakeClock
from stoker.warm.credentials import CredentialInfo, fingerprint
from stoker.warm.run import RevisitPolicy


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def target(backend: str, tmp_path: Path) -> Iterator[str]:
    with fresh_target(backend, tmp_path) as place:
        yield place


async def open_stores(backend: str, target: str) -> WarmStores:
    policy, clock = RevisitPolicy(delay=60.0), FakeClock()
    if backend == "sqlite":
        return await warm_stores_on_file(Path(target), clock, policy)
    pool = await create_pool(PG_URL, schema=target, min_size=1, max_size=4)
    return await warm_stores_on_pool(pool, clock, policy, owns=True)


async def test_values_are_kept_replaced_deleted_and_only_fingerprints_listed(
        backend: str, target: str) -> None:
    stores = await open_stores(backend, target)
    try:
        store = stores.credentials
        await store.put("header:x-bypass", "first", 10.0)
        await store.put("header:x-bypass", "second", 20.0)
        await store.put("cookie:age_ok", "1", 30.0)
        assert await store.listed() == [
            CredentialInfo("cookie:age_ok", fingerprint("1"), 30.0),
            CredentialInfo("header:x-bypass", fingerprint("second"), 20.0)]
        assert "second" not in repr(await store.listed())
        assert await store.delete("cookie:age_ok") and not await store.delete("cookie:age_ok")
    finally:
        await stores.aclose()
    reopened = await open_stores(backend, target)  # a restart keeps them
    try:
        assert await reopened.credentials.values() == {"header:x-bypass": "second"}
    finally:
        await reopened.aclose()

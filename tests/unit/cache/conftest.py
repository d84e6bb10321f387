"""Fixtures for cache-tier unit tests: a fake clock, a body directory, a real SQLite L2."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stoker.backends.sqlite.cache_store import SqliteCacheStore
from stoker.cache.bodies import BodyStore
from stoker.clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def bodies(tmp_path: Path) -> BodyStore:
    return BodyStore(tmp_path / "bodies")


@pytest.fixture
async def sqlite_store(
    tmp_path: Path, bodies: BodyStore, clock: FakeClock
) -> AsyncIterator[SqliteCacheStore]:
    store = await SqliteCacheStore.open(tmp_path / "cache.sqlite3", bodies, clock)
    yield store
    await store.close()

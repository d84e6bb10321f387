"""Purge behaviour on every store: tag index across variants and tiers, soft and hard.

Runs against every backend of ``test_cache_store.STORES`` plus a tiered store
whose L1 holds nothing (every entry only in L2), which is how a purge must
find entries another process wrote or L1 evicted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.contract.test_cache_store import STORES, opened_store
from tests.entries import make_entry

from stoker.backends.sqlite.cache_store import SqliteCacheStore
from stoker.cache.bodies import BodyStore
from stoker.cache.entry import CacheEntry, Freshness
from stoker.cache.memory import MemoryStore
from stoker.cache.store import CacheStore, EntryRef
from stoker.cache.tiered import TieredStore
from stoker.clock import FakeClock

KINDS = [*STORES, "tiered-l2-only"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path,
                clock: FakeClock) -> AsyncIterator[CacheStore]:
    if request.param == "tiered-l2-only":
        l2 = await SqliteCacheStore.open(tmp_path / "c.db", BodyStore(tmp_path / "b"), clock)
        opened: CacheStore = TieredStore(MemoryStore(1, clock), l2, clock)
        yield opened
        await opened.close()
    else:
        async with opened_store(request.param, tmp_path, clock) as shared:
            yield shared


def ref(entry: CacheEntry) -> EntryRef:
    return EntryRef(entry.primary_key, entry.variant)


def site() -> list[CacheEntry]:
    """post-1 under two variants, post-10 and an untagged page."""
    return [
        make_entry("https://example.com/p/1", variant='accept-language="en"',
                   vary=("accept-language",), tags=("post-1", "posts")),
        make_entry("https://example.com/p/1", variant='accept-language="de"',
                   vary=("accept-language",), tags=("post-1", "posts")),
        make_entry("https://example.com/p/10", tags=("post-10", "posts")),
        make_entry("https://example.com/about"),
    ]


async def test_hard_tag_purge_removes_every_variant_and_only_those(store: CacheStore) -> None:
    entries = site()
    for entry in entries:
        await store.put(entry)
    refs = await store.refs_for_tags(["post-1"])
    assert refs == sorted([ref(entries[0]), ref(entries[1])],
                          key=lambda r: (r.primary_key, r.variant))
    assert await store.delete(refs) == 2
    assert await store.get(entries[0].primary_key) == []
    assert await store.get(entries[2].primary_key) == [entries[2]]
    assert await store.get(entries[3].primary_key) == [entries[3]]
    assert await store.refs_for_tags(["post-1"]) == []
    assert await store.refs_for_tags(["posts"]) == [ref(entries[2])]


async def test_soft_tag_purge_keeps_entries_stale_with_their_windows(
        store: CacheStore, clock: FakeClock) -> None:
    entries = site()
    for entry in entries:
        await store.put(entry)
    clock.advance(5)
    now = clock.now()
    assert await store.soften(await store.refs_for_tags(["posts"]), now) == 3
    for entry in entries[:3]:
        [stored] = [e for e in await store.get(entry.primary_key) if e.variant == entry.variant]
        assert stored.fresh_until == now
        assert (stored.stale_until, stored.error_until, stored.keep_until) == (
            entry.stale_until, entry.error_until, entry.keep_until)
        assert stored.freshness(now) is Freshness.STALE_SWR
    [untouched] = await store.get(entries[3].primary_key)
    assert untouched.freshness(now) is Freshness.FRESH
    assert await store.refs_for_tags(["posts"]) != []  # soft: still indexed


async def test_prefix_and_everything(store: CacheStore) -> None:
    entries = site()
    for entry in entries:
        await store.put(entry)
    assert len(await store.refs_for_url_prefix("https://example.com/p/")) == 3
    assert len(await store.refs_for_url_prefix("")) == 4
    newer = make_entry("https://example.com/p/1", version="v2")
    await store.put(newer)
    assert await store.delete_except_version("v2") == 4
    assert await store.get(newer.primary_key) == [newer]
    assert await store.refs_for_tags(["posts"]) == []


async def test_refs_round_trip_any_text_and_overlapping_tags_once(store: CacheStore,
                                                                   clock: FakeClock) -> None:
    """Keys and variants carrying JSON's and SQL's special characters are found, softened
    and deleted exactly; an entry carrying several of the tags asked for is listed once."""
    odd = [
        make_entry('https://example.com/q?a="b"&c=\\d', variant='x="1\\2", y="é 😀"',
                   vary=("x", "y"), tags=("a", "b")),
        make_entry("https://example.com/%E2%9C%93'; DROP TABLE cache_entries; --",
                   tags=("b", "c")),
        make_entry("https://example.com/plain", tags=("c",)),
    ]
    for entry in odd:
        await store.put(entry)
    refs = await store.refs_for_tags(["a", "b", "c", "absent"])
    assert refs == sorted(ref(entry) for entry in odd)
    assert await store.soften(refs[:2], clock.now()) == 2
    assert await store.delete(refs[:2]) == 2
    assert await store.refs_for_tags(["a", "b", "c"]) == [refs[2]]
    assert await store.delete_primary([refs[2].primary_key, "v1|absent"]) == 1
    assert await store.refs_for_url_prefix("") == []

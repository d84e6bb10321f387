"""The CacheStore contract: every tier (memory, SQLite, tiered) behaves the same.

A new backend joins by adding a name to ``STORES`` and a branch to ``opened_store``.
Redis runs at ``STOKER_TEST_REDIS_URL`` (default: database 9 on 127.0.0.1), each store
under a random prefix whose keys are deleted at the end; when Redis is unreachable its
tests fail saying so.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from tests.entries import make_entry

from stoker.backends.redis.cache_store import RedisCacheStore
from stoker.backends.sqlite.cache_store import SqliteCacheStore
from stoker.cache.bodies import BodyStore
from stoker.cache.entry import CacheEntry, Freshness
from stoker.cache.memory import MemoryStore
from stoker.cache.store import CacheStore, EntryRef
from stoker.cache.tiered import TieredStore
from stoker.clock import FakeClock

STORES = ["memory", "sqlite", "sqlite-thread", "tiered", "redis"]
"""``sqlite-thread``: SQLite with ``inline_reads`` off (reads on its worker thread too)."""
L1_BYTES = 10_000_000
REDIS_URL = os.environ.get("STOKER_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")


@asynccontextmanager
async def redis_store(clock: FakeClock, prefix: str | None = None,
                      **options: Any) -> AsyncIterator[RedisCacheStore]:
    """A :class:`RedisCacheStore` under ``prefix`` (default: a new random one), closed on
    exit; the prefix's keys are deleted then (several stores may share one prefix)."""
    prefix = prefix or f"stoker-test-{uuid.uuid4().hex}:"
    try:
        store = await RedisCacheStore.open(REDIS_URL, clock, prefix=prefix, **options)
    except (RedisConnectionError, OSError) as error:
        pytest.fail(f"Redis is unreachable at {REDIS_URL} ({error!r}); the Redis cache store "
                    "tests need it (start it, or point STOKER_TEST_REDIS_URL at one).",
                    pytrace=False)
    try:
        yield store
    finally:
        await store.close()
        await drop_keys(prefix)


async def drop_keys(prefix: str) -> None:
    """Delete every key under ``prefix`` (never anything else in the database)."""
    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*", count=1000)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@asynccontextmanager
async def opened_store(kind: str, directory: Path, clock: FakeClock) -> AsyncIterator[CacheStore]:
    """A store of ``kind``, closed on exit."""
    if kind == "redis":
        async with redis_store(clock) as shared:
            yield shared
        return
    if kind == "memory":
        opened: CacheStore = MemoryStore(L1_BYTES, clock)
    else:
        opened = await SqliteCacheStore.open(
            directory / "cache.sqlite3", BodyStore(directory / "bodies"), clock,
            inline_reads=kind != "sqlite-thread",
        )
        if kind == "tiered":
            opened = TieredStore(MemoryStore(L1_BYTES, clock), opened, clock)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=STORES)
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[CacheStore]:
    async with opened_store(request.param, tmp_path, clock) as opened:
        yield opened


def ref(entry: CacheEntry) -> EntryRef:
    return EntryRef(entry.primary_key, entry.variant)


def by_variant(entries: list[CacheEntry]) -> list[CacheEntry]:
    return sorted(entries, key=lambda entry: entry.variant)


async def put_all(store: CacheStore, *entries: CacheEntry) -> None:
    for entry in entries:
        await store.put(entry)


async def test_round_trip_keeps_every_field(store: CacheStore) -> None:
    entry = make_entry(
        variant="gzip",
        status=203,
        headers=(
            (b"x-binary", bytes(range(256))),
            (b"x-empty", b""),
            (b"x-dup", b"1"),
            (b"x-dup", b"2\r\n\x00"),
        ),
        body=b"\x00\xff\x00body",
        body_size=8,
        initial_age=3.25,
        vary=("accept-encoding", "accept-language"),
        tags=("post-1", "home"),
        etag='"abc"',
        last_modified="Tue, 15 Nov 1994 12:45:26 GMT",
        stored_at=1_700_000_000.125,
        origin_vouched=True,
    )
    await store.put(entry)
    assert await store.get(entry.primary_key) == [entry]


async def test_round_trip_of_a_body_in_a_file(store: CacheStore) -> None:
    """The tiers on one machine keep a body file's name; Redis, shared by nodes whose files
    are their own, never does: it stores the body inline or not at all (here: 50 MB, over
    its bound, and no file to read), never a name another node cannot open."""
    entry = make_entry(body=None, body_file="0123abcd.body", body_size=50_000_000)
    await store.put(entry)
    kept = [] if isinstance(store, RedisCacheStore) else [entry]
    assert await store.get(entry.primary_key) == kept


async def test_round_trip_of_an_empty_body(store: CacheStore) -> None:
    entry = make_entry(status=204, headers=(), body=b"", body_size=0)
    await store.put(entry)
    assert await store.get(entry.primary_key) == [entry]


async def test_get_of_an_unknown_key_is_empty(store: CacheStore) -> None:
    assert await store.get("v1|GET|https://example.com/nothing") == []


async def test_variants_live_under_one_primary_key(store: CacheStore) -> None:
    gzip = make_entry(variant="gzip", body=b"g")
    brotli = make_entry(variant="br", body=b"b")
    other = make_entry("https://example.com/other")
    await put_all(store, gzip, brotli, other)
    assert by_variant(await store.get(gzip.primary_key)) == [brotli, gzip]
    assert await store.get(other.primary_key) == [other]


async def test_put_replaces_in_place(store: CacheStore) -> None:
    old = make_entry(tags=("old",))
    new = replace(old, status=404, body=b"gone", body_size=4, tags=("new",))
    await put_all(store, old, new)
    assert await store.get(old.primary_key) == [new]
    assert await store.refs_for_tags(["old"]) == []
    assert await store.refs_for_tags(["new"]) == [ref(new)]
    assert (await store.stats())["entries"] == 1


async def test_put_many_puts_each_in_order(store: CacheStore) -> None:
    old = make_entry(tags=("old",))
    new = replace(old, status=404, body=b"gone", body_size=4, tags=("new",))
    other = make_entry("https://example.com/other", variant="v")
    await store.put_many([old, other, new])
    assert await store.get(old.primary_key) == [new]  # the later one wins
    assert await store.get(other.primary_key) == [other]
    assert await store.refs_for_tags(["old"]) == []
    assert (await store.stats())["entries"] == 2


async def test_keep_until_hides_an_entry_everywhere(store: CacheStore, clock: FakeClock) -> None:
    entry = make_entry(keep=600.0, tags=("t",))
    await store.put(entry)
    clock.advance(599.0)
    assert await store.get(entry.primary_key) == [entry]
    clock.advance(1.0)
    assert await store.get(entry.primary_key) == []
    assert await store.refs_for_tags(["t"]) == []
    assert await store.refs_for_url_prefix("https://") == []
    assert await store.soften([ref(entry)], clock.now()) == 0
    assert await store.delete([ref(entry)]) == 0


async def test_delete_counts_what_existed(store: CacheStore) -> None:
    kept = make_entry("https://example.com/kept")
    gone = make_entry("https://example.com/gone")
    await put_all(store, kept, gone)
    missing = EntryRef("v1|GET|https://example.com/missing", "")
    assert await store.delete([ref(gone), missing]) == 1
    assert await store.delete([ref(gone)]) == 0
    assert await store.get(gone.primary_key) == []
    assert await store.get(kept.primary_key) == [kept]


async def test_delete_primary_removes_every_variant(store: CacheStore) -> None:
    gzip = make_entry(variant="gzip")
    plain = make_entry(variant="")
    other = make_entry("https://example.com/other")
    await put_all(store, gzip, plain, other)
    assert await store.delete_primary([gzip.primary_key, "v1|GET|nope"]) == 2
    assert await store.get(gzip.primary_key) == []
    assert await store.get(other.primary_key) == [other]
    assert await store.delete_primary([gzip.primary_key]) == 0


async def test_tag_match_is_exact(store: CacheStore) -> None:
    one = make_entry("https://example.com/1", tags=("post-1",))
    ten = make_entry("https://example.com/10", tags=("post-10", "posts"))
    await put_all(store, one, ten)
    assert await store.refs_for_tags(["post-1"]) == [ref(one)]
    assert await store.refs_for_tags(["post-10"]) == [ref(ten)]
    assert await store.refs_for_tags(["post", "post-", "ost-1"]) == []
    assert await store.refs_for_tags(["post-1", "posts"]) == sorted(
        [ref(one), ref(ten)], key=lambda r: r.primary_key
    )
    assert await store.refs_for_tags([]) == []


async def test_tags_cover_every_variant(store: CacheStore) -> None:
    gzip = make_entry(variant="gzip", tags=("t",))
    brotli = make_entry(variant="br", tags=("t", "only-br"))
    await put_all(store, gzip, brotli)
    assert await store.refs_for_tags(["t"]) == [ref(brotli), ref(gzip)]
    assert await store.delete([ref(brotli)]) == 1
    assert await store.refs_for_tags(["t"]) == [ref(gzip)]
    assert await store.refs_for_tags(["only-br"]) == []


async def test_url_prefix_selects_by_absolute_url(store: CacheStore) -> None:
    urls = [
        "https://example.com/blog/1",
        "https://example.com/blog/2?page=2",
        "https://example.com/blogger",
        "https://example.org/blog/1",
    ]
    entries = [make_entry(url) for url in urls]
    await put_all(store, *entries)
    refs = [ref(entry) for entry in entries]
    assert await store.refs_for_url_prefix("https://example.com/blog/") == refs[:2]
    assert await store.refs_for_url_prefix("https://example.com/blog") == refs[:3]
    assert await store.refs_for_url_prefix("https://example.net/") == []
    assert await store.refs_for_url_prefix("") == sorted(refs, key=lambda r: r.primary_key)


async def test_soften_makes_stale_and_keeps_windows(store: CacheStore, clock: FakeClock) -> None:
    entry = make_entry(fresh=60.0, stale=120.0, error=300.0, keep=600.0)
    await store.put(entry)
    clock.advance(10.0)
    now = clock.now()
    missing = EntryRef("v1|GET|https://example.com/missing", "")
    assert await store.soften([ref(entry), missing], now) == 1
    [soft] = await store.get(entry.primary_key)
    assert soft == replace(entry, fresh_until=now)
    assert soft.freshness(now) is Freshness.STALE_SWR
    assert await store.soften([ref(entry)], now) == 0


async def test_soften_serves_stale_only_what_may_be_served_stale(
        store: CacheStore, clock: FakeClock) -> None:
    entry = make_entry(fresh=600.0, stale=600.0, error=600.0, keep=600.0)
    guarded = make_entry("https://example.com/mr", fresh=600.0, stale=600.0, error=600.0,
                         keep=600.0, stale_ok=False)
    await store.put(entry)
    await store.put(guarded)
    clock.advance(10.0)
    now = clock.now()
    assert await store.soften([ref(entry), ref(guarded)], now) == 2
    [soft] = await store.get(entry.primary_key)
    assert soft == replace(entry, fresh_until=now)
    assert soft.freshness(now) is Freshness.STALE_SWR  # until its old expiry
    [kept] = await store.get(guarded.primary_key)  # must-revalidate & co: never served stale
    assert kept == replace(guarded, fresh_until=now, stale_until=now, error_until=now)
    assert kept.freshness(now) is Freshness.EXPIRED


async def test_soften_leaves_already_stale_entries(store: CacheStore, clock: FakeClock) -> None:
    entry = make_entry(fresh=60.0)
    await store.put(entry)
    clock.advance(61.0)
    assert await store.soften([ref(entry)], clock.now()) == 0
    assert await store.get(entry.primary_key) == [entry]


async def test_delete_except_version(store: CacheStore) -> None:
    current = make_entry(version="v1")
    old = make_entry(version="v2", variant="gzip")
    lookalike = make_entry(version="v10")
    await put_all(store, current, old, lookalike)
    assert await store.delete_except_version("v1") == 2
    assert await store.get(current.primary_key) == [current]
    assert await store.get(old.primary_key) == []
    assert await store.get(lookalike.primary_key) == []


async def test_stats_count_entries_and_bytes(store: CacheStore) -> None:
    empty = await store.stats()
    assert (empty["entries"], empty["bytes"], await store.count()) == (0, 0, 0)
    small = make_entry("https://example.com/small")
    large = make_entry("https://example.com/large", body=b"x" * 5000, body_size=5000)
    await put_all(store, small, large)
    full = await store.stats()
    assert full["entries"] == await store.count() == 2
    assert full["bytes"] > 5000
    await store.delete([ref(large)])
    after = await store.stats()
    assert after["entries"] == await store.count() == 1
    assert 0 < after["bytes"] < full["bytes"] - 5000 + 1


FORMS = (("br", b"\x00br"), ("gzip", b"\x1f\x8b"))


async def test_add_codings_gives_the_stored_version_its_forms(store: CacheStore) -> None:
    due = make_entry(codings_due=True)
    await store.put(due)
    await store.add_codings(due, FORMS)
    [stored] = await store.get(due.primary_key)
    assert (stored.encoded, stored.codings_due) == (FORMS, False)
    assert stored == due.with_codings(FORMS)


async def test_add_codings_never_touches_a_newer_version(store: CacheStore) -> None:
    due = make_entry(codings_due=True)
    newer = replace(due, body=b"<p>newer</p>", stored_at=due.stored_at + 1)
    same_time = replace(due, body=b"<p>other</p>")
    await store.put(newer)
    await store.add_codings(due, FORMS)
    await store.put(same_time)
    await store.add_codings(due, FORMS)
    assert await store.get(due.primary_key) == [same_time]


async def test_add_codings_never_brings_back_a_deleted_entry(store: CacheStore) -> None:
    due = make_entry(codings_due=True)
    await store.put(due)
    await store.delete([ref(due)])
    await store.add_codings(due, FORMS)
    assert await store.get(due.primary_key) == []


async def test_add_codings_keeps_a_soft_purge(store: CacheStore, clock: FakeClock) -> None:
    due = make_entry(codings_due=True, now=clock.now())
    await store.put(due)
    await store.soften([ref(due)], clock.now())
    await store.add_codings(due, FORMS)
    [stored] = await store.get(due.primary_key)
    assert stored.encoded == FORMS and stored.fresh_until == clock.now()


async def test_read_now_gives_what_get_gives_or_none(store: CacheStore,
                                                     clock: FakeClock) -> None:
    live = make_entry("https://example.com/live", fresh=60.0, keep=60.0)
    gone = make_entry("https://example.com/gone", fresh=1.0, keep=1.0)
    await put_all(store, live, gone)
    if isinstance(store, TieredStore):
        await store.flush()
    clock.advance(2.0)
    for key in (live.primary_key, gone.primary_key, "no such key"):
        now = store.read_now(key)
        if now is not None:
            assert by_variant(now) == by_variant(await store.get(key))
    if not isinstance(store, SqliteCacheStore | RedisCacheStore) or store.read_now(
            live.primary_key) is not None:
        assert store.read_now(live.primary_key) == [live]
        assert store.read_now(gone.primary_key) == []

"""What only the Redis cache tier does: key expiry, bodies too large to share, several nodes
on one prefix, and add_codings racing puts.  The CacheStore contract itself runs on Redis in
``tests/contract/test_cache_store*.py``; like it, these need the Redis at
``STOKER_TEST_REDIS_URL`` and fail saying so when it is unreachable.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import redis.asyncio as aioredis
from tests.contract.test_cache_store import REDIS_URL, redis_store
from tests.entries import make_entry

from stoker.backends.redis.cache_store import ref_id
from stoker.cache.bodies import BodyStore
from stoker.cache.entry import CacheEntry
from stoker.cache.store import EntryRef
from stoker.clock import FakeClock

FORMS = (("br", b"\x00br"), ("gzip", b"\x1f\x8b"))


def ref(entry: CacheEntry) -> EntryRef:
    return EntryRef(entry.primary_key, entry.variant)


async def pttl(prefix: str, key: bytes) -> int:
    """The milliseconds key ``prefix + key`` has left (-2: no such key)."""
    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        return int(await client.pttl(prefix.encode() + key))
    finally:
        await client.aclose()


async def test_keys_expire_with_the_entry(tmp_path: Path) -> None:
    clock = FakeClock()
    prefix = "stoker-test-expiry-" + tmp_path.name + ":"
    entry = make_entry(keep=600.0, tags=("post-1",))
    async with redis_store(clock, prefix) as store:
        await store.put(entry)
        for key in (b"e:" + ref_id(entry.primary_key, entry.variant),
                    b"v:" + entry.primary_key.encode(), b"t:post-1"):
            assert 595_000 < await pttl(prefix, key) <= 600_000, key


async def test_redis_drops_expired_entries_and_reads_clean_the_indexes(tmp_path: Path) -> None:
    clock = FakeClock()
    prefix = "stoker-test-drop-" + tmp_path.name + ":"
    short = make_entry("https://example.com/short", fresh=0.1, stale=0.1, error=0.1, keep=0.2,
                       tags=("t",))
    kept = make_entry("https://example.com/kept", tags=("t",))
    async with redis_store(clock, prefix) as store:
        await store.put_many([short, kept])
        await asyncio.sleep(0.4)
        clock.advance(0.4)
        assert await pttl(prefix, b"e:" + ref_id(short.primary_key, short.variant)) == -2
        assert await store.refs_for_url_prefix("https://example.com/") == [ref(kept)]
        assert await store.refs_for_tags(["t"]) == [ref(kept)]
        assert (await store.stats())["entries"] == await store.count() == 1
        client = aioredis.Redis.from_url(REDIS_URL)
        try:
            assert await client.zcard(prefix + "u") == 1  # the URL index lost its member
        finally:
            await client.aclose()


async def test_a_body_larger_than_max_object_bytes_is_not_stored(tmp_path: Path) -> None:
    clock = FakeClock()
    bodies = BodyStore(tmp_path / "bodies")
    name = bodies.new_final_name()
    bodies.path(name).write_bytes(b"f" * 800)
    in_file = make_entry("https://example.com/file", body=None, body_file=name, body_size=800)
    large = make_entry("https://example.com/large", body=b"x" * 1001, body_size=1001)
    async with redis_store(clock, max_object_bytes=1000, bodies=bodies) as store:
        await store.put_many([in_file, large])
        assert await store.get(in_file.primary_key) == [
            replace(in_file, body=b"f" * 800, body_file=None)]  # shared inline
        assert await store.get(large.primary_key) == []
        too_large = replace(in_file, body_size=1001, stored_at=in_file.stored_at + 1)
        await store.put(too_large)
        assert await store.get(in_file.primary_key) == []  # never the older version
        assert await store.count() == 0


async def test_a_body_file_is_not_stored_without_a_body_store() -> None:
    in_file = make_entry(body=None, body_file="0123abcd.body", body_size=10)
    async with redis_store(FakeClock()) as store:
        await store.put(in_file)
        assert await store.get(in_file.primary_key) == []


async def test_two_nodes_on_one_prefix_see_each_others_writes(tmp_path: Path) -> None:
    clock = FakeClock()
    prefix = "stoker-test-nodes-" + tmp_path.name + ":"
    one = make_entry("https://example.com/1", tags=("post-1",))
    two = make_entry("https://example.com/2", tags=("post-1",))
    async with redis_store(clock, prefix) as first, redis_store(clock, prefix) as second:
        await first.put_many([one, two])
        assert await second.get(one.primary_key) == [one]
        assert await second.refs_for_tags(["post-1"]) == [ref(one), ref(two)]
        assert await second.delete([ref(one)]) == 1
        assert await first.get(one.primary_key) == []
        assert await first.refs_for_url_prefix("https://example.com/") == [ref(two)]
        clock.advance(1.0)
        assert await first.soften([ref(two)], clock.now()) == 1
        [soft] = await second.get(two.primary_key)
        assert soft.fresh_until == clock.now()
        assert await second.delete_primary([two.primary_key]) == 1
        assert await first.count() == 0


async def test_add_codings_racing_a_newer_put_keeps_the_newer_version(tmp_path: Path) -> None:
    clock = FakeClock()
    prefix = "stoker-test-race-" + tmp_path.name + ":"
    async with redis_store(clock, prefix) as first, redis_store(clock, prefix) as second:
        for round_ in range(50):
            old = make_entry(f"https://example.com/{round_}", codings_due=True)
            newer = replace(old, body=b"<p>newer</p>", stored_at=old.stored_at + 1)
            await first.put(old)
            racers = [first.add_codings(old, FORMS), second.put(newer)]
            await asyncio.gather(*(racers if round_ % 2 else reversed(racers)))
            assert await second.get(old.primary_key) == [newer]


async def test_add_codings_on_another_node_is_seen_by_all(tmp_path: Path) -> None:
    clock = FakeClock()
    prefix = "stoker-test-codings-" + tmp_path.name + ":"
    due = make_entry(codings_due=True)
    async with redis_store(clock, prefix) as first, redis_store(clock, prefix) as second:
        await first.put(due)
        await second.add_codings(due, FORMS)
        assert await first.get(due.primary_key) == [due.with_codings(FORMS)]
        await second.add_codings(due, (("br", b"other"),))  # none due any more
        assert await first.get(due.primary_key) == [due.with_codings(FORMS)]
        assert first.read_now(due.primary_key) is None  # every read is a round trip

"""Nodes sharing a Redis tier of the test's own and a PostgreSQL bus, through Redis's
faults (issue 35, items 2-4): no purge is lost and no page older than a purge is served
after its answer when Redis evicts a tag set, is down during the purge, or comes back
with writes queued from before the purge."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
from tests.conftest import free_port
from tests.integration.conftest import Origin
from tests.integration.test_purge_relay import TAGGED, member, served
from tests.integration.test_redis_down import listening, own_redis
from tests.job_backends import pg_schema, schema_url

from stoker.app.stoker import Stoker
from stoker.backends.redis.cache_store import ref_id
from stoker.cache.entry import CacheEntry
from stoker.cache.outcome import Kind
from stoker.purge.scope import PurgeScope

URL = "http://site.test/t"


def shared(port: int, schema: str, **more: Any) -> dict[str, Any]:
    return {"processes": 1, "l2_url": f"redis://127.0.0.1:{port}/0",
            "database_url": schema_url(schema), **more}


async def evict_tag_set(port: int, tag: str, entry_key: bytes, variants: bytes) -> None:
    """Fill Redis nearly to its ``maxmemory`` (``allkeys-lru``) with keys of no node's,
    then, once they are older than the entry's last read, past it, reading the entry and
    its variant set all along, until Redis has evicted the tag's set (what a busy shared
    tier does to an index nobody reads) and kept the entry; then delete the fillers.
    Redis's LRU clock ticks in seconds: the index is the oldest key, then the first
    fillers, and the entry, read last, is never the least recently used."""
    client = aioredis.Redis(port=port)
    limit = int((await client.config_get("maxmemory"))["maxmemory"])
    try:
        fillers = 0
        while (await client.info("memory"))["used_memory"] < limit - 200_000:
            await client.set(f"filler:{fillers}", b"x" * 65536)  # no eviction yet
            fillers += 1
        await asyncio.sleep(2.1)
        for _ in range(5_000):
            await client.hgetall(entry_key)
            await client.smembers(variants)
            await client.set(f"filler:{fillers}", b"x" * 4096)
            fillers += 1
            if not await client.exists(f"stoker:t:{tag}"):
                assert await client.exists(entry_key) and await client.exists(variants)
                await client.delete(*[f"filler:{each}" for each in range(fillers)])
                return  # room again: nothing else is evicted
        raise AssertionError("Redis never evicted the tag set")
    finally:
        await client.aclose()


async def test_a_tag_purge_holds_when_redis_evicted_the_tag_set(
        origin: Origin, tmp_path: Path) -> None:
    """Item 2: the ``t:<tag>`` set is gone (``allkeys-lru`` at a small ``maxmemory``): the
    purge's lookup finds nothing in Redis, yet no node reads the old copy from it, nor
    one started after the purge (its relay puts what the bus keeps in force)."""
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    port = free_port()
    lru = ("--maxmemory", "3mb", "--maxmemory-policy", "allkeys-lru",
           "--maxmemory-samples", "64")  # few keys, all sampled: least recently used first
    with pg_schema(migrated=False) as schema, own_redis(port, tmp_path, lru):
        await listening(port)
        async with member(origin, tmp_path / "a", "a", **shared(port, schema)) as (a, _), \
                member(origin, tmp_path / "b", "b", **shared(port, schema)) as (b, _):
            await served(a, "/t")
            await a.store.flush()
            key = a.pipeline.keying.key_for_url(URL)
            await evict_tag_set(port, "post-1", b"stoker:e:" + ref_id(key, ""),
                                b"stoker:v:" + key.encode())
            origin.app.set("/t", headers=TAGGED, body=b"v2")
            purged = await a.purger.purge(PurgeScope(tags=("post-1",)))
            await a.store.flush()
            await b.store.flush()
            in_redis = await raw_l2(b, key)
            async with member(origin, tmp_path / "c", "c", **shared(port, schema)) as (c, _):
                late = await served(c, "/t")  # started after the purge
            after = [await served(b, "/t"), await served(a, "/t"), await served(b, "/t")]
    assert purged.unconfirmed == () and purged.purged == 1  # L1's: Redis's lookup missed it
    assert [entry.body for entry in in_redis] == [b"v1"]  # the old copy is still in Redis
    assert late == (Kind.MISS, b"v2")
    assert [body for _, body in after] == [b"v2"] * 3


async def raw_l2(stoker: Stoker, key: str) -> list[CacheEntry]:
    """What the Redis tier holds for ``key``, read past every screen."""
    return await stoker.store._l2.get(key)  # type: ignore[attr-defined]


async def test_a_purge_while_redis_is_down_is_relayed_at_once_and_applied_once_it_is_back(
        origin: Origin, tmp_path: Path) -> None:
    """Item 3: Redis stopped; a purge answers at once (L1's count, ``l2_pending``), reaches
    the other node before it answers, and is carried out in Redis once Redis is back."""
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    port = free_port()
    with pg_schema(migrated=False) as schema:
        settings = shared(port, schema, l2_write_timeout=3)
        with own_redis(port, tmp_path) as redis:
            await listening(port)
            async with member(origin, tmp_path / "a", "a", **settings) as (a, _), \
                    member(origin, tmp_path / "b", "b", **settings) as (b, _):
                await served(a, "/t")
                await a.store.flush()
                assert await served(b, "/t") == (Kind.HIT, b"v1")  # in B's L1 now
                client = aioredis.Redis(port=port)
                await client.save()  # so the restarted Redis holds the old copy again
                await client.aclose()
                redis.terminate()
                redis.wait(10)
                origin.app.set("/t", headers=TAGGED, body=b"v2")
                started = time.monotonic()
                result = await a.purger.purge(PurgeScope(tags=("post-1",)))
                took = time.monotonic() - started
                during = [await served(b, "/t"), await served(a, "/t")]
                with own_redis(port, tmp_path):
                    await listening(port)
                    await flushed(a, b)
                    key = a.pipeline.keying.key_for_url(URL)
                    in_redis = await raw_l2(a, key)
                    async with member(origin, tmp_path / "c", "c", **settings) as (c, _):
                        late = await served(c, "/t")
    assert took < 1.5, took
    assert result.l2_pending and result.purged == 1 and result.unconfirmed == ()
    assert result.as_json()["l2_pending"] is True
    assert [body for _, body in during] == [b"v2", b"v2"]
    assert [entry.body for entry in in_redis] in ([], [b"v2"])  # purged, maybe stored anew
    assert late[1] == b"v2"


async def flushed(*stokers: Stoker) -> None:
    """Each store's queued L2 work done, retrying its flush while Redis comes back."""
    for stoker in stokers:
        for _ in range(20):
            try:
                await stoker.store.flush()
                break
            except Exception:
                await asyncio.sleep(0.5)
        else:
            raise AssertionError("L2 never took the queued work")


async def test_a_write_queued_while_redis_was_down_never_resurrects_a_purged_page(
        origin: Origin, tmp_path: Path) -> None:
    """Item 4: node B fetched the old page while Redis was down; Redis comes back while
    B's queue waits out its backoff, A purges (B puts the purge in force), then B's queue
    runs: the old page is never written, and A never reads it from Redis."""
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    port = free_port()
    with pg_schema(migrated=False) as schema:
        settings = shared(port, schema, l2_write_timeout=3)
        with own_redis(port, tmp_path) as redis:
            await listening(port)
            async with member(origin, tmp_path / "a", "a", **settings) as (a, _), \
                    member(origin, tmp_path / "b", "b", **settings) as (b, _):
                key = a.pipeline.keying.key_for_url(URL)
                writes: list[bytes] = []
                read_by_a: list[bytes] = []
                attempts = spy_writes(b, a, key, writes, read_by_a)
                redis.terminate()
                redis.wait(10)
                assert (await served(b, "/t"))[1] == b"v1"  # fetched, its write queued
                while attempts() < 3:  # failed three times: B's queue backs off 2 s now
                    await asyncio.sleep(0.05)
                with own_redis(port, tmp_path):
                    await listening(port)
                    origin.app.set("/t", headers=TAGGED, body=b"v2")
                    result = await a.purger.purge(PurgeScope(tags=("post-1",)))
                    answered = len(writes)
                    await flushed(b, a)
                    in_redis = await raw_l2(a, key)
                    after = [await served(a, "/t"), await served(b, "/t")]
    assert result.unconfirmed == ()
    assert [body for _, body in after] == [b"v2", b"v2"]  # A promoted nothing old
    assert writes[answered:].count(b"v1") == 0, writes  # never written after the answer
    assert b"v1" not in read_by_a
    assert [entry.body for entry in in_redis] in ([], [b"v2"])


def spy_writes(writer: Stoker, reader: Stoker, key: str, writes: list[bytes],
               read: list[bytes]) -> Any:
    """Note the bodies ``writer``'s queue writes to Redis under ``key`` and, right after
    each write, what ``reader`` reads (through L1 to Redis, promoting what it gets as any
    request does); returns a count of write attempts."""
    l2 = writer.store._queue._l2  # type: ignore[attr-defined]
    real = l2.put_many
    tried = 0

    async def put_many(entries: Sequence[CacheEntry]) -> None:
        nonlocal tried
        tried += 1
        await real(entries)
        ours = [entry.body or b"" for entry in entries if entry.primary_key == key]
        writes.extend(ours)
        if ours:
            read.extend(entry.body or b"" for entry in await reader.store.get(key))

    l2.put_many = put_many
    return lambda: tried

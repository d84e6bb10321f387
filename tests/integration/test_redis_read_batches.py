"""The Redis tier's batched reads, on a real Redis: the ``get`` calls of one loop iteration
go as one script call, equal keys read once, every call answered as a lone read would be;
a failed batch fails its calls (and the next batch reads again), a cancelled call or a
closing store leaves no call waiting."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from tests.conftest import free_port
from tests.contract.test_cache_store import REDIS_URL, drop_keys
from tests.entries import make_entry
from tests.integration.test_redis_down import listening, own_redis

from stoker.backends.redis.cache_store import READ_BATCH, RedisCacheStore
from stoker.cache.entry import CacheEntry
from stoker.clock import FakeClock


class Counting(RedisCacheStore):
    """The Redis tier, noting the keys of each read script call it makes."""

    batches: list[list[str]]

    async def _run(self, script: AsyncScript, *args: Any, client: Pipeline | None = None) -> Any:
        if script is self._get:
            self.batches.append([arg for arg in args[1:]])
        return await super()._run(script, *args, client=client)


@asynccontextmanager
async def counting_store(clock: FakeClock, url: str = REDIS_URL) -> AsyncIterator[Counting]:
    prefix = f"stoker-test-batch-{uuid.uuid4().hex}:"
    store = Counting(aioredis.Redis.from_url(url), clock, prefix=prefix)
    store.batches = []
    try:
        yield store
    finally:
        await store.close()
        if url == REDIS_URL:
            await drop_keys(prefix)


def pages(count: int) -> list[CacheEntry]:
    return [make_entry(f"https://example.com/{n}", body=b"page %d" % n) for n in range(count)]


async def test_calls_of_one_iteration_go_as_one_batch_and_equal_keys_are_read_once() -> None:
    clock = FakeClock()
    async with counting_store(clock) as store:
        stored = pages(5)
        vary = [make_entry("https://example.com/v", variant=v, vary=("accept-language",))
                for v in ("de", "en")]
        await store.put_many([*stored, *vary])
        alone = {entry.primary_key: await store.get(entry.primary_key)
                 for entry in [*stored, vary[0]]}
        store.batches.clear()
        keys = [entry.primary_key for entry in stored] * 10 + [vary[0].primary_key] * 3 + [
            "v1|GET|https://example.com/none"]
        found = await asyncio.gather(*(store.get(key) for key in keys))
    assert store.batches == [list(dict.fromkeys(keys))]  # one call, each key once
    assert [[e.variant for e in variants] for variants in found[-4:-1]] == [["de", "en"]] * 3
    assert found[-1] == []
    for key, variants in zip(keys, found, strict=False):
        if key in alone:
            assert variants == alone[key]  # as a lone read answers it
    assert found[0] is not found[5]  # each call has a list of its own


async def test_calls_made_while_a_batch_flies_go_in_the_next_and_see_writes_before_them(
        ) -> None:
    clock = FakeClock()
    first, second = make_entry(body=b"first"), make_entry(body=b"second")
    async with counting_store(clock) as store:
        await store.put(first)
        store.batches.clear()
        early = asyncio.create_task(store.get(first.primary_key))
        while not store.batches:  # the batch of ``early`` is sent
            await asyncio.sleep(0)
        later = asyncio.create_task(store.get(first.primary_key))
        await asyncio.sleep(0)
        assert len(store.batches) == 1  # ``later`` waits for the next batch
        await store.put(second)  # a write finished before ``late`` is called
        late = await store.get(first.primary_key)
        assert [e.body for e in await early] == [b"first"]
        assert [e.body for e in await later] in ([b"first"], [b"second"])
        assert [e.body for e in late] == [b"second"]
        assert len(store.batches) in (2, 3) and len(store.batches[1]) == 1


async def test_a_batch_holds_at_most_read_batch_keys() -> None:
    clock = FakeClock()
    async with counting_store(clock) as store:
        keys = [f"v1|GET|https://example.com/{n}" for n in range(READ_BATCH + 5)]
        assert await asyncio.gather(*(store.get(key) for key in keys)) == [[]] * len(keys)
    assert [len(batch) for batch in store.batches] == [READ_BATCH, 5]


async def test_a_failed_batch_fails_its_calls_and_the_next_batch_reads_again(
        tmp_path: Path) -> None:
    clock = FakeClock()
    port = free_port()
    async with counting_store(clock, f"redis://127.0.0.1:{port}/0") as store:
        failed = await asyncio.wait_for(asyncio.gather(
            *(store.get(f"v1|GET|https://example.com/{n % 3}") for n in range(20)),
            return_exceptions=True), 10)
        assert len(failed) == 20
        assert all(isinstance(error, RedisConnectionError) for error in failed)
        assert len(store.batches) == 1
        with own_redis(port, tmp_path):
            await listening(port)
            await store.put(make_entry())
            assert [e.body for e in await store.get(make_entry().primary_key)] == [
                b"<p>hello</p>"]


async def test_a_cancelled_call_leaves_the_others_answered() -> None:
    clock = FakeClock()
    entry = make_entry()
    async with counting_store(clock) as store:
        await store.put(entry)
        calls = [asyncio.create_task(store.get(entry.primary_key)) for _ in range(3)]
        await asyncio.sleep(0)
        calls[1].cancel()
        done = await asyncio.gather(*calls, return_exceptions=True)
    assert isinstance(done[1], asyncio.CancelledError)
    assert done[0] == done[2] == [entry]


async def test_closing_the_store_cancels_the_calls_waiting() -> None:
    clock = FakeClock()
    async with counting_store(clock) as store:
        calls = [asyncio.create_task(store.get(f"v1|GET|https://example.com/{n}"))
                 for n in range(3)]
        await asyncio.sleep(0)
        await store.close()
        done = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 5)
    assert all(isinstance(outcome, asyncio.CancelledError) for outcome in done)


@pytest.mark.parametrize("count", [1, 2])
async def test_a_lone_call_is_one_batch(count: int) -> None:
    clock = FakeClock()
    async with counting_store(clock) as store:
        for _ in range(count):
            assert await store.get("v1|GET|https://example.com/x") == []
    assert store.batches == [["v1|GET|https://example.com/x"]] * count

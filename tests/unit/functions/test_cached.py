"""``@cached`` on a fake clock: fresh, stale and refreshed once, collapsed, failing calls
(on a miss: every waiter gets the exception; on a refresh: the stale result within its
windows), purges (tags through the purger, invalidate, everything), plain functions."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from tests.conftest import until
from tests.unit.functions.conftest import Opened

from stoker.cache.entry import CacheEntry
from stoker.functions import PickleCodec, cached
from stoker.purge.scope import PurgeScope


class Calls:
    """A function's calls, counted, optionally held until released or failing."""

    def __init__(self) -> None:
        self.count = 0
        self.gate: asyncio.Event | None = None
        self.fail: Exception | None = None

    async def __call__(self, x: Any) -> Any:
        self.count += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        return {"x": x, "call": self.count, "tuple": (1, 2)}


def cache(opened: Opened, calls: Calls, **options: Any) -> Any:
    async def compute(x: Any) -> Any:
        return await calls(x)

    return cached(opened, **options)(compute)


async def test_a_fresh_result_is_returned_without_calling(opened: Opened) -> None:
    calls = Calls()
    fn = cache(opened, calls, ttl="1m")
    first = await fn(1)
    assert first == {"x": 1, "call": 1, "tuple": [1, 2]}  # as stored: JSON
    opened.clock.advance(59)
    assert await fn(1) == first and calls.count == 1
    first["x"] = "changed"  # a caller's copy is its own
    assert (await fn(1))["x"] == 1
    assert (await fn(2))["call"] == 2
    opened.clock.advance(1)
    assert (await fn(1))["call"] == 3  # expired, no swr: called again


async def test_a_stale_result_is_returned_and_refreshed_once(opened: Opened) -> None:
    calls = Calls()
    fn = cache(opened, calls, ttl="1m", swr="5m")
    await fn(1)
    opened.clock.advance(61)
    calls.gate = asyncio.Event()
    stale = await asyncio.gather(*(fn(1) for _ in range(10)))
    assert {each["call"] for each in stale} == {1}  # at once, none waited
    await until(lambda: calls.count == 2, "one refresh")
    assert (await fn(1))["call"] == 1  # still refreshing: still stale, no second refresh
    calls.gate.set()
    await fn.cache.settle()
    assert calls.count == 2 and (await fn(1))["call"] == 2


async def test_concurrent_misses_share_one_call(opened: Opened) -> None:
    calls = Calls()
    calls.gate = asyncio.Event()
    fn = cache(opened, calls)
    waiting = [asyncio.ensure_future(fn(1)) for _ in range(20)]
    await until(lambda: calls.count == 1, "the leader's call")
    calls.gate.set()
    results = await asyncio.gather(*waiting)
    assert calls.count == 1 and all(result == results[0] for result in results)
    assert results[0] is not results[1]  # each caller gets its own copy


async def test_an_exception_on_a_miss_reaches_every_waiting_caller(opened: Opened) -> None:
    calls = Calls()
    calls.gate, calls.fail = asyncio.Event(), ValueError("down")
    fn = cache(opened, calls, sie="1h")
    waiting = [asyncio.ensure_future(fn(1)) for _ in range(5)]
    await until(lambda: calls.count == 1, "the leader's call")
    calls.gate.set()
    outcomes = await asyncio.gather(*waiting, return_exceptions=True)
    assert all(isinstance(each, ValueError) for each in outcomes) and calls.count == 1
    calls.fail = None
    assert (await fn(1))["call"] == 2  # nothing was stored: called again


async def test_an_exception_on_refresh_keeps_the_stale_result_within_sie(
        opened: Opened, caplog: pytest.LogCaptureFixture) -> None:
    calls = Calls()
    fn = cache(opened, calls, ttl="1m", sie="1h")
    await fn(1)
    calls.fail = ValueError("down")
    opened.clock.advance(120)
    with caplog.at_level(logging.WARNING, "stoker.functions"):
        assert (await fn(1))["call"] == 1
    assert "ValueError: down" in caplog.text and calls.count == 2
    opened.clock.advance(3600)  # past its sie window
    with pytest.raises(ValueError, match="down"):
        await fn(1)


async def test_a_failing_background_refresh_keeps_the_stale_result(opened: Opened) -> None:
    calls = Calls()
    fn = cache(opened, calls, ttl="1m", swr="5m", sie="1h")
    await fn(1)
    calls.fail = ValueError("down")
    opened.clock.advance(61)
    assert (await fn(1))["call"] == 1
    await fn.cache.settle()
    assert calls.count == 2 and (await fn(1))["call"] == 1
    opened.clock.advance(600)  # past swr, within sie: called, and falls back
    assert (await fn(1))["call"] == 1 and calls.count == 3


async def test_a_tag_purge_through_the_purger_drops_results(opened: Opened) -> None:
    calls = Calls()
    fn = cache(opened, calls, tags=lambda x: ["prices", f"sku-{x}"], swr="5m")
    await fn(1), await fn(2)
    result = await opened.stoker.purger.purge(PurgeScope(tags=("sku-1",)))
    assert result.purged == 1
    assert (await fn(1))["call"] == 3 and (await fn(2))["call"] == 2
    await opened.stoker.purger.purge(PurgeScope(tags=("prices",), soft=True))
    assert (await fn(2))["call"] == 2  # soft: stale, served while refreshed
    await fn.cache.settle()
    assert (await fn(2))["call"] == 4


async def test_invalidate_and_purge_everything(opened: Opened) -> None:
    calls = Calls()
    fn = cache(opened, calls)
    await fn(1), await fn(2)
    assert await fn.invalidate(1) == 1
    assert (await fn(1))["call"] == 3 and (await fn(2))["call"] == 2
    await opened.stoker.purger.purge(PurgeScope(everything=True))  # a version bump
    assert (await fn(2))["call"] == 4


async def test_a_purge_during_a_call_keeps_its_result_out(opened: Opened) -> None:
    calls = Calls()
    calls.gate = asyncio.Event()
    fn = cache(opened, calls, tags=["t"])
    call = asyncio.ensure_future(fn(1))
    await until(lambda: calls.count == 1, "the call")
    await opened.stoker.purger.purge(PurgeScope(tags=("t",)))
    calls.gate.set()
    assert (await call)["call"] == 1  # its caller gets it, the cache does not
    assert (await fn(1))["call"] == 2


async def test_results_live_in_both_tiers_under_their_own_key(opened: Opened) -> None:
    calls = Calls()
    fn = cache(opened, calls, tags=["t"])
    await fn(1)
    await opened.stoker.store.flush()
    key = "1|" + fn.cache_key(1)
    assert key == f"1|fn:{__name__}.cache.<locals>.compute([1])"
    [entry] = await opened.stoker.store.get_l2(key)
    assert entry.tags == ("t",) and entry.headers == ((b"content-type", b"application/json"),)


async def test_arguments_that_are_not_json_need_key(opened: Opened) -> None:
    calls = Calls()
    fn = cache(opened, calls)
    with pytest.raises(TypeError, match="key="):
        await fn(object())

    @cached(opened, key=lambda thing: type(thing).__name__)
    async def kind(thing: object) -> str:
        calls.count += 1
        return type(thing).__name__

    assert await kind(object()) == "object" and await kind(object()) == "object"
    assert calls.count == 1 and kind.cache_key(object()).endswith('.kind("object")')



async def test_an_unsigned_pickle_is_a_miss_never_unpickled(
        opened: Opened, caplog: pytest.LogCaptureFixture) -> None:
    codec = PickleCodec(b"k" * 32)

    @cached(opened, codec=codec)
    async def value(x: int) -> set[int]:
        return {x}

    assert await value(1) == {1}
    key = "1|" + value.cache_key(1)
    [stored] = opened.stoker.store.get_l1(key) or []
    forged = CacheEntry(**{**{name: getattr(stored, name) for name in (
        "primary_key", "variant", "url", "status", "headers", "body_file", "body_size",
        "response_time", "initial_age", "fresh_until", "stale_until", "error_until",
        "keep_until", "stored_at", "stale_ok")}, "body": b"\x80\x04K\x02."})  # pickle of 2
    await opened.stoker.store.put(forged)
    with caplog.at_level(logging.WARNING, "stoker.functions"):
        assert await value(1) == {1}
    assert "unreadable" in caplog.text


async def test_a_plain_function_keeps_its_signature_and_runs_off_the_loop(
        opened: Opened) -> None:
    seen: list[int] = []

    @cached(opened)
    def square(x: int) -> int:
        seen.append(x)
        return x * x

    with pytest.raises(RuntimeError, match=r"asyncio\.to_thread"):
        square(3)
    await square.cache.bind()  # its runtime's loop: this one
    assert await asyncio.to_thread(square, 3) == 9
    assert await asyncio.to_thread(square, 3) == 9 and seen == [3]
    assert square.__name__ == "square" and not asyncio.iscoroutinefunction(square)

"""Stale-while-revalidate, collapsing and revalidation, in process (on real servers:
``tests/integration/test_proxy_concurrency.py``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
from tests.core.conftest import core_proxy
from tests.integration.conftest import Origin, Proxy

from stoker.clock import FakeClock, SystemClock

N = 200


def slow_clock() -> FakeClock:
    """A fake clock behind real time, so the origin's real Date never adds age."""
    return FakeClock(start=SystemClock().now() - 10_000, auto_advance=False)


async def _burst(proxy: Proxy, path: str, n: int = N) -> list[httpx.Response]:
    return list(await asyncio.gather(*(proxy.client.get(path) for _ in range(n))))


async def test_200_concurrent_misses_make_one_origin_request(origin: Origin,
                                                             proxy: Proxy) -> None:
    origin.app.set("/herd", headers=[("cache-control", "max-age=60")], body=b"h" * 5000,
                   delay=0.3)
    responses = await _burst(proxy, "/herd")
    assert {r.status_code for r in responses} == {200}
    assert {r.content for r in responses} == {b"h" * 5000}
    assert origin.app.count("/herd") == 1
    statuses = [r.headers["cache-status"] for r in responses]
    # every other request waited on that one fetch, or (HTTP/2's 100-stream limit queues
    # the rest) came after it landed and was a hit
    assert sum("collapsed" in s or "; hit" in s for s in statuses) == N - 1
    # a follower got the response the leader fetched and stored (RFC 9211 ``stored``)
    assert all("stored" in s for s in statuses if "collapsed" in s)


async def test_uncacheable_response_is_never_shared_by_collapsing(origin: Origin,
                                                                  proxy: Proxy) -> None:
    origin.app.set("/me", headers=[("cache-control", "private, max-age=60")], body=b"mine",
                   delay=0.2)
    responses = await _burst(proxy, "/me", 20)
    assert all(r.status_code == 200 for r in responses)
    assert origin.app.count("/me") == 20  # each client got its own response
    assert not any("collapsed" in r.headers["cache-status"] for r in responses)


async def test_stale_while_revalidate_one_background_request(origin: Origin,
                                                             tmp_path: Path) -> None:
    clock = slow_clock()
    origin.app.set("/swr", headers=[("cache-control", "max-age=10, stale-while-revalidate=60"),
                                    ("etag", '"1"')], body=b"old", not_modified_etag=None)
    async with core_proxy(origin.app, tmp_path / "d", clock=clock) as proxy:
        await proxy.client.get("/swr")
        clock.advance(20)  # stale, inside the SWR window
        origin.app.set("/swr", headers=[("cache-control", "max-age=600"), ("etag", '"2"')],
                       body=b"new", delay=0.3)
        responses = await _burst(proxy, "/swr")
        stale = [r for r in responses if r.content == b"old"]
        assert stale, "the stale copy is served at once while revalidating"
        assert all("detail=stale-while-revalidate" in r.headers["cache-status"] for r in stale)
        # once the one revalidation landed, later requests hit the new copy
        assert all(r.content == b"new" and "hit" in r.headers["cache-status"]
                   for r in responses if r.content != b"old")
        await proxy.stoker.pipeline.drain()
        assert origin.app.count("/swr") == 2  # the first fill + exactly one revalidation
        fresh = await proxy.client.get("/swr")
        assert fresh.content == b"new"
        assert "hit" in fresh.headers["cache-status"]
        _, _, headers = origin.app.requests[-1]
        assert headers["if-none-match"] == '"1"'


async def test_revalidation_304_refreshes_without_body(origin: Origin, tmp_path: Path) -> None:
    clock = slow_clock()
    origin.app.set("/r", headers=[("cache-control", "max-age=10"), ("etag", '"e"')],
                   body=b"kept body", not_modified_etag='"e"')
    async with core_proxy(origin.app, tmp_path / "d", clock=clock) as proxy:
        await proxy.client.get("/r")
        clock.advance(30)
        refreshed = await proxy.client.get("/r")
        again = await proxy.client.get("/r")
    assert refreshed.content == b"kept body"
    assert "fwd=stale; fwd-status=304" in refreshed.headers["cache-status"]
    assert "hit" in again.headers["cache-status"]
    assert origin.app.count("/r") == 2


def proxy_host(response: httpx.Response) -> str:
    return response.request.headers["host"]


async def test_miss_whose_l2_read_outlasts_the_flight_does_not_refetch(
        origin: Origin, tmp_path: Path) -> None:
    """Fault: the L2 read of the second request returns only after the first request's
    fetch has filled L1 and landed (a slow disk); it must not go to the origin again."""
    origin.app.set("/slow-l2", headers=[("cache-control", "max-age=60")], body=b"once")
    async with core_proxy(origin.app, tmp_path) as proxy:
        l2 = proxy.stoker.l2
        real_get = l2.get
        waiting, first_done = asyncio.Event(), asyncio.Event()

        async def late_get(primary_key: str) -> list[Any]:
            l2.get = real_get  # type: ignore[method-assign]  # only this one read is slow
            waiting.set()
            await first_done.wait()
            return []  # as if the first request's L2 write had not landed yet

        l2.get = late_get  # type: ignore[method-assign]
        second = asyncio.create_task(proxy.client.get("/slow-l2"))
        await waiting.wait()
        first = await proxy.client.get("/slow-l2")
        first_done.set()
        late = await second
    assert first.text == late.text == "once"
    assert origin.app.count("/slow-l2") == 1
    assert "hit" in late.headers["cache-status"]

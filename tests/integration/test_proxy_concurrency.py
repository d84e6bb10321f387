"""Collapsing under real concurrency and stale-if-error with the origin server stopped, on
real servers (the rest in process: ``tests/core/test_concurrency.py``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from tests.conftest import serving
from tests.integration.conftest import Origin, Proxy, running_proxy
from tests.integration.origin import ScriptedOrigin

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


async def test_stale_if_error_when_origin_is_down(tmp_path: Path) -> None:
    clock = slow_clock()
    app = ScriptedOrigin()
    app.set("/sie", headers=[("cache-control", "max-age=10, stale-if-error=600")], body=b"safe")
    async with serving(app) as origin_url, running_proxy(origin_url, tmp_path / "d",
                                                         clock=clock, keep_stale=0) as proxy:
        await proxy.client.get("/sie")
        await proxy.stoker.store.flush()
        clock.advance(60)
        app.set("/sie", status=503, body=b"down")
        on_5xx = await proxy.client.get("/sie")
        assert on_5xx.status_code == 200 and on_5xx.content == b"safe"
        assert "detail=stale-if-error" in on_5xx.headers["cache-status"]
    # the origin server is now stopped entirely
    async with running_proxy(origin_url, tmp_path / "d", clock=clock, keep_stale=0) as proxy:
        stopped = await proxy.client.get("/sie", headers={"host": proxy_host(on_5xx)})
        assert stopped.status_code == 200 and stopped.content == b"safe"
        assert "detail=stale-if-error" in stopped.headers["cache-status"]
        clock.advance(1000)  # past the window: the error shows
        failed = await proxy.client.get("/sie", headers={"host": proxy_host(on_5xx)})
        assert failed.status_code == 502


def proxy_host(response: httpx.Response) -> str:
    return response.request.headers["host"]

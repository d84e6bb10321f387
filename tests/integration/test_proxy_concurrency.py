"""Stale-while-revalidate, collapsing and stale-if-error under real concurrency."""

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
    assert sum("collapsed" in s for s in statuses) == N - 1


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
    async with running_proxy(origin.url, tmp_path / "d", clock=clock) as proxy:
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
    async with running_proxy(origin.url, tmp_path / "d", clock=clock) as proxy:
        await proxy.client.get("/r")
        clock.advance(30)
        refreshed = await proxy.client.get("/r")
        again = await proxy.client.get("/r")
    assert refreshed.content == b"kept body"
    assert "fwd=stale; fwd-status=304" in refreshed.headers["cache-status"]
    assert "hit" in again.headers["cache-status"]
    assert origin.app.count("/r") == 2


async def test_stale_if_error_when_origin_is_down(tmp_path: Path) -> None:
    clock = slow_clock()
    app = ScriptedOrigin()
    app.set("/sie", headers=[("cache-control", "max-age=10, stale-if-error=600")], body=b"safe")
    async with serving(app) as origin_url, running_proxy(origin_url, tmp_path / "d",
                                                         clock=clock) as proxy:
        await proxy.client.get("/sie")
        await proxy.stoker.store.flush()
        clock.advance(60)
        app.set("/sie", status=503, body=b"down")
        on_5xx = await proxy.client.get("/sie")
        assert on_5xx.status_code == 200 and on_5xx.content == b"safe"
        assert "detail=stale-if-error" in on_5xx.headers["cache-status"]
    # the origin server is now stopped entirely
    async with running_proxy(origin_url, tmp_path / "d", clock=clock) as proxy:
        stopped = await proxy.client.get("/sie", headers={"host": proxy_host(on_5xx)})
        assert stopped.status_code == 200 and stopped.content == b"safe"
        assert "detail=stale-if-error" in stopped.headers["cache-status"]
        clock.advance(1000)  # past the window: the error shows
        failed = await proxy.client.get("/sie", headers={"host": proxy_host(on_5xx)})
        assert failed.status_code == 502


def proxy_host(response: httpx.Response) -> str:
    return response.request.headers["host"]

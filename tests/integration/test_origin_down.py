"""Up when the origin is down: stale copies kept for keep_stale and served on origin
failures (RFC 9111 §4.2.4), never where the response forbids it; the breaker stops
waiting on a dead origin."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import httpx
import pytest
from tests.conftest import free_port, serving
from tests.integration.admin_harness import purging
from tests.integration.conftest import running_proxy
from tests.integration.origin import ScriptedOrigin
from tests.integration.raw_origin import RawRequest, raw_origin

from stoker.clock import FakeClock
from stoker.origin.health import THRESHOLD


def slow_clock() -> FakeClock:
    return FakeClock(auto_advance=False)


@pytest.mark.parametrize(("directives", "served_stale"), [
    ("max-age=10", True),
    ("public, max-age=10", True),
    ("max-age=10, must-revalidate", False),
    ("max-age=10, proxy-revalidate", False),
    ("no-cache", False),
    ("s-maxage=10", False),
])
async def test_origin_errors_get_the_stale_copy_unless_forbidden(
        tmp_path: Path, directives: str, served_stale: bool) -> None:
    clock = slow_clock()
    app = ScriptedOrigin()
    app.set("/p", headers=[("cache-control", directives), ("etag", '"1"')], body=b"kept")
    async with serving(app) as url, running_proxy(url, tmp_path, clock=clock) as proxy:
        await proxy.client.get("/p")
        clock.advance(3600)  # stale, well within keep_stale (1 day)
        app.set("/p", status=503, body=b"down")
        answer = await proxy.client.get("/p")
    if served_stale:
        assert (answer.status_code, answer.content) == (200, b"kept")
        assert "; hit" in answer.headers["cache-status"]
        assert "detail=stale-if-error" in answer.headers["cache-status"]
        assert "warning" not in answer.headers
    else:
        assert answer.status_code == 503


async def test_stopped_origin_and_keep_stale_limit(tmp_path: Path) -> None:
    clock = slow_clock()
    app = ScriptedOrigin()
    app.set("/s", headers=[("cache-control", "max-age=10")], body=b"kept")
    async with serving(app) as url, running_proxy(url, tmp_path, clock=clock,
                                                  keep_stale="1h") as proxy:
        await proxy.client.get("/s")
        host = proxy.url.removeprefix("http://")
    async with running_proxy(url, tmp_path, clock=clock, keep_stale="1h") as proxy:
        clock.advance(1800)
        stale = await proxy.client.get("/s", headers={"host": host})
        clock.advance(3600)  # past keep_stale
        gone = await proxy.client.get("/s", headers={"host": host})
    assert (stale.status_code, stale.content) == (200, b"kept")
    assert gone.status_code == 502


async def test_hanging_origin_times_out_to_the_stale_copy(tmp_path: Path) -> None:
    clock = slow_clock()
    app = ScriptedOrigin()
    app.set("/h", headers=[("cache-control", "max-age=10")], body=b"kept")
    async with serving(app) as url, running_proxy(url, tmp_path, clock=clock,
                                                  origin_timeout="0.5s") as proxy:
        await proxy.client.get("/h")
        clock.advance(60)
        app.set("/h", headers=[("cache-control", "max-age=10")], body=b"new", delay=5)
        answer = await proxy.client.get("/h")
    assert (answer.status_code, answer.content) == (200, b"kept")


async def test_origin_closing_mid_response_is_never_stored(tmp_path: Path) -> None:
    async def cut(_: RawRequest, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncache-control: max-age=60\r\n"
                     b"content-length: 100\r\n\r\nshort")
        return False  # and close: 95 bytes never come

    async with raw_origin(cut) as origin, running_proxy(origin.url, tmp_path) as proxy:
        for _ in range(2):
            with contextlib.suppress(httpx.HTTPError):  # the client sees the drop
                await proxy.client.get("/cut")
        stored = await proxy.stoker.store.get(proxy.stoker.pipeline.keying.key_for_url(
            f"{proxy.url}/cut"))
    assert stored == []
    assert len(origin.requests) == 2


async def test_breaker_answers_from_stale_without_waiting_and_reports_down(
        tmp_path: Path) -> None:
    """Only requests that get no answer at all count: the origin is stopped (refused)."""
    clock = slow_clock()
    app = ScriptedOrigin()
    port = free_port()
    for n in range(THRESHOLD + 3):
        app.set(f"/b/{n}", headers=[("cache-control", "max-age=10")], body=b"kept %d" % n)
    async with purging(f"http://127.0.0.1:{port}", tmp_path, clock=clock) as (proxy, admin):
        async with serving(app, port=port):
            for n in range(THRESHOLD + 3):
                await proxy.client.get(f"/b/{n}")
        clock.advance(60)
        for n in range(THRESHOLD):  # these ask the origin and fail: the breaker opens
            assert (await proxy.client.get(f"/b/{n}")).content == b"kept %d" % n
        asked = sum(app.count(f"/b/{n}") for n in range(THRESHOLD + 3))
        answer = await proxy.client.get(f"/b/{THRESHOLD}")
        status = (await admin.client.get("/api/status")).json()
        assert answer.content == b"kept %d" % THRESHOLD
        assert status["origin_down_since"] is not None
        clock.advance(10)  # past the cooldown: one background probe
        for n in range(THRESHOLD + 3):
            app.set(f"/b/{n}", headers=[("cache-control", "max-age=10")], body=b"back")
        async with serving(app, port=port):
            probe = await proxy.client.get(f"/b/{THRESHOLD + 1}")
            await proxy.stoker.pipeline.drain()
            up = (await admin.client.get("/api/status")).json()
    assert sum(app.count(f"/b/{n}") for n in range(THRESHOLD + 3)) == asked + 1  # the probe
    assert probe.content == b"kept %d" % (THRESHOLD + 1)  # answered stale, probed behind
    assert up["origin_down_since"] is None
    assert set(up["gc"]) == {"frozen_objects", "collections", "freezes", "deep_collections"}


async def test_erroring_pages_do_not_make_a_live_origin_down(tmp_path: Path) -> None:
    """Eight 5xx pages in a row, then a stale 404 with explicit freshness: the origin
    answered every time, so the 404 is refetched, not reused unasked."""
    clock = slow_clock()
    app = ScriptedOrigin()
    app.set("/gone", status=404, headers=[("cache-control", "max-age=10")], body=b"gone 1")
    for n in range(8):
        app.set(f"/err/{n}", status=500, headers=[("cache-control", "no-store")])
    async with serving(app) as url, purging(url, tmp_path, clock=clock) as (proxy, admin):
        await proxy.client.get("/gone")
        clock.advance(60)
        for n in range(8):
            assert (await proxy.client.get(f"/err/{n}")).status_code == 500
        app.set("/gone", status=404, headers=[("cache-control", "max-age=10")], body=b"gone 2")
        again = await proxy.client.get("/gone")
        status = (await admin.client.get("/api/status")).json()
    assert again.content == b"gone 2" and app.count("/gone") == 2
    assert status["origin_down_since"] is None

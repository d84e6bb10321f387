"""A hung origin: once it is judged down, cold requests fail fast instead of waiting.

Issue 34: with the origin's PHP stopped (SIGSTOP: connections accepted, never
answered), every cold page waited the whole ``origin_timeout``, also after six timeouts
in a row: the open breaker only let stale copies answer unasked.  Now, once
``THRESHOLD`` requests in a row got no answer, a request with nothing to serve is
answered ``503`` with ``Retry-After`` at once; stale copies still answer; one request at
a time, after the cooldown, probes the origin, and its answer closes the breaker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from pathlib import Path

import httpx
from tests.integration.conftest import running_proxy
from tests.integration.raw_origin import RawRequest, raw_origin, response

from stoker.clock import FakeClock
from stoker.origin.health import COOLDOWN, THRESHOLD

TIMEOUT = 1.0
"""``origin_timeout``: how long a request the origin never answers waits."""
FAST = 0.3
"""A request turned away answers well within this."""


class Hangable:
    """An origin answering every GET with a cacheable page, or (while ``hung``) accepting
    the request and never answering, as a stopped PHP-FPM does."""

    def __init__(self) -> None:
        self.hung = False
        self.released = asyncio.Event()
        self.asked: list[str] = []

    async def __call__(self, request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        self.asked.append(request.path)
        if self.hung:
            await self.released.wait()  # the test's end: let the connection go
            return False
        writer.write(response("200 OK", {"Cache-Control": "max-age=10"},
                              f"page {request.path}".encode()))
        return True


async def timed(request: Awaitable[httpx.Response]) -> tuple[httpx.Response, float]:
    """The answer to ``request``, and the seconds it took."""
    started = time.monotonic()
    answer = await request
    return answer, time.monotonic() - started


async def test_cold_requests_fail_fast_while_one_probe_tests_a_hung_origin(
        tmp_path: Path, mode: str) -> None:
    clock = FakeClock(auto_advance=False)
    origin = Hangable()
    async with raw_origin(origin) as server, running_proxy(
            server.url, tmp_path, clock=clock, kind=mode,
            origin_timeout=f"{TIMEOUT}s") as proxy:
        try:
            client = proxy.client
            assert (await client.get("/kept")).status_code == 200
            clock.advance(60)  # /kept is stale, servable on error (keep_stale)
            origin.hung = True
            for n in range(THRESHOLD):  # these wait for the origin and time out: it is down
                answer, _ = await timed(client.get(f"/cold/{n}"))
                assert answer.status_code == 504
            asked = len(origin.asked)

            cold, took = await timed(client.get("/cold/after"))
            assert (cold.status_code, took < FAST) == (503, True), took
            assert cold.headers["retry-after"] == str(int(COOLDOWN))
            assert "detail=origin-down" in cold.headers["cache-status"]
            posted, took = await timed(client.post("/form", content=b"x=1"))
            assert (posted.status_code, took < FAST) == (503, True), took
            stale, took = await timed(client.get("/kept"))
            assert (stale.status_code, stale.text, took < FAST) == (200, "page /kept", True)
            assert len(origin.asked) == asked  # none of them asked the origin

            clock.advance(COOLDOWN)  # the probe is due: one request asks, the others wait
            probe = asyncio.create_task(timed(client.get("/cold/probe")))
            while len(origin.asked) == asked:
                await asyncio.sleep(0.01)
            other, took = await timed(client.get("/cold/other"))
            assert (other.status_code, took < FAST) == (503, True), took
            probed, took = await probe
            assert (probed.status_code, took >= TIMEOUT) == (504, True)
            assert origin.asked[asked:] == ["/cold/probe"]

            origin.hung = False
            clock.advance(COOLDOWN)
            back, _ = await timed(client.get("/cold/back"))  # the probe: answered, it is up
            assert (back.status_code, back.text) == (200, "page /cold/back")
            again, _ = await timed(client.get("/cold/again"))
            assert again.status_code == 200
            assert not proxy.stoker.pipeline.health.is_down()
        finally:
            origin.released.set()


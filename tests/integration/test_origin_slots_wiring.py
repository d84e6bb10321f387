"""The shared origin limit and the hit counter, wired into the running proxy."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from tests.conftest import serving
from tests.integration.conftest import Origin, running_proxy

from stoker.adapters.visit import PipelineVisitor

Message = MutableMapping[str, Any]


class CountingOrigin:
    """Holds every request until released; records the most in flight at once."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.peak = 0
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, scope: Message, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            return
        await receive()
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        self.arrived.set()
        await self.release.wait()
        self.in_flight -= 1
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"cache-control", b"max-age=60")]})
        await send({"type": "http.response.body", "body": b"ok"})


async def test_origin_never_sees_more_than_origin_max_concurrency(tmp_path: Path) -> None:
    origin = CountingOrigin()
    async with serving(origin) as origin_url, \
            running_proxy(origin_url, tmp_path, origin_max_concurrency=2,
                          origin_max_per_client=2) as proxy:  # one client: every slot
        requests = [asyncio.create_task(proxy.client.get(f"/p/{n}")) for n in range(6)]
        await origin.arrived.wait()
        limiter = proxy.stoker.origin.limiter  # type: ignore[attr-defined]
        # both slot holders at the origin (the second may still be connecting when the
        # others queue), the other four waiting for a slot
        while origin.in_flight < 2 or limiter.stats().visitors_waiting < 4:
            await asyncio.sleep(0.01)
        origin.release.set()
        answers = await asyncio.gather(*requests)
    assert all(answer.status_code == 200 for answer in answers)
    assert origin.peak == 2


async def test_visitors_are_counted_and_warm_visits_are_not(origin: Origin,
                                                            tmp_path: Path) -> None:
    origin.app.set("/c", headers=[("cache-control", "max-age=60")])
    async with running_proxy(origin.url, tmp_path) as proxy:
        visitor = PipelineVisitor(proxy.stoker.pipeline, proxy.stoker.clock,
                                  stopgap_header=b"x-stoker-stopgap")
        site = proxy.url
        await visitor.visit(f"{site}/c", [], allowance=1)
        await proxy.client.get("/c")
        await proxy.client.get("/c")
        counts = proxy.stoker.pipeline.hits.drain()
    assert counts == {f"{site}/c": (2, 0)}

"""Warm work survives an origin outage, on a real ``stoker serve``: URLs whose visits
failed while the origin was down are warmed once it answers again, and a run whose
discovery failed is retried until it completes, with nobody asking."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tests.conftest import free_port, serving, wait_listening
from tests.integration.warm_site import SITE_HOST, TOKEN, SiteOrigin, start_serve

DEADLINE = 90.0
PAGES = 30
Message = MutableMapping[str, Any]


@dataclass
class SwitchedOrigin(SiteOrigin):
    """The warm test site, switched down: every request answers ``down`` (a 502, as a
    web server in front of a stopped PHP answers) until it is set back to ``None``."""

    down: int | None = None

    async def __call__(self, scope: Message, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.down is not None:
            self.hits[f"down:{scope['path']}"] += 1
            await send({"type": "http.response.start", "status": self.down,
                        "headers": [(b"content-length", b"4")]})
            await send({"type": "http.response.body", "body": b"down"})
            return
        await super().__call__(scope, receive, send)


@dataclass
class Node:
    proxy: httpx.AsyncClient
    admin: httpx.AsyncClient
    log: Path


@asynccontextmanager
async def node(origin_url: str, directory: Path, **settings: Any) -> AsyncIterator[Node]:
    """``stoker serve`` for the site at ``origin_url``, short outage retries."""
    port = free_port()
    log_path = directory / "serve.log"
    with log_path.open("wb") as log:
        proc, admin_url = await start_serve(origin_url, directory / "data", log, port=port,
                                            warm_workers=4, **settings)
        try:
            await wait_listening(port, timeout=30)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30,
                                         headers={"host": SITE_HOST}) as proxy, \
                    httpx.AsyncClient(base_url=admin_url, timeout=30, headers={
                        "authorization": f"Bearer {TOKEN}"}) as admin:
                yield Node(proxy, admin, log_path)
        finally:
            proc.terminate()
            await asyncio.wait_for(proc.wait(), 30)


async def eventually(check: Any, what: str, timeout: float = DEADLINE) -> Any:
    end = time.monotonic() + timeout
    while True:
        found = await check()
        if found:
            return found
        assert time.monotonic() < end, f"{what}: not within {timeout:g} s"
        await asyncio.sleep(0.1)


async def run_of(admin: httpx.AsyncClient, run_id: int) -> dict[str, Any]:
    answer: dict[str, Any] = (await admin.get(f"/api/warm/{run_id}")).json()
    return answer


async def ended(admin: httpx.AsyncClient, run_id: int) -> dict[str, Any] | None:
    run = await run_of(admin, run_id)
    return run if run["phase"] in ("done", "failed", "cancelled") else None


async def test_urls_that_failed_while_the_origin_was_down_are_warmed_when_it_is_back(
        tmp_path: Path) -> None:
    site = SwitchedOrigin(PAGES)
    async with serving(site) as origin_url, node(origin_url, tmp_path,
                                                 outage_retry="1s") as stoker:
        await stoker.admin.post("/api/warm", json={})  # the sitemap is read while up
        site.down = 502
        ...

"""Fixtures: a real scriptable origin and Stoker served by a real HTTP server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from playwright.async_api import Browser
from tests.conftest import serving
from tests.integration.browser_harness import chromium
from tests.integration.origin import ScriptedOrigin

from stoker.adapters.asgi_proxy import ProxyApp
from stoker.app.stoker import Stoker
from stoker.clock import Clock
from stoker.config.rules import Rule
from stoker.config.settings import Settings, settings_from


@dataclass
class Origin:
    app: ScriptedOrigin
    url: str


@dataclass
class Proxy:
    url: str
    stoker: Stoker
    client: httpx.AsyncClient
    protocol: str = "http/1.1"


@pytest.fixture
async def origin() -> AsyncIterator[Origin]:
    app = ScriptedOrigin()
    async with serving(app, kind="uvicorn") as url:
        yield Origin(app, url)


@asynccontextmanager
async def running_proxy(origin_url: str, data_dir: Path, *, clock: Clock | None = None,
                        rules: tuple[Rule, ...] = (), kind: str = "granian",
                        port: int | None = None, **settings: Any) -> AsyncIterator[Proxy]:
    """Stoker in front of ``origin_url`` on a real server; closes the stores on exit."""
    config = settings_from({"origin": origin_url, "data_dir": str(data_dir), **settings}, rules)
    async with proxy_for(config, clock=clock, kind=kind, port=port) as running:
        yield running


@asynccontextmanager
async def proxy_for(config: Settings, *, clock: Clock | None = None, kind: str = "granian",
                    port: int | None = None) -> AsyncIterator[Proxy]:
    """Stoker configured by ``config`` on a real server; closes the stores on exit."""
    stoker = await Stoker.open(config, clock=clock)
    try:
        limits = httpx.Limits(max_connections=400)
        async with serving(ProxyApp(stoker.pipeline), kind=kind, port=port) as url, \
                httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as client:
            yield Proxy(url, stoker, client)
    finally:
        await stoker.close()


@pytest.fixture(params=["front", "http/1.1", "h2c"])
async def proxy(origin: Origin, tmp_path: Path,
                request: pytest.FixtureRequest) -> AsyncIterator[Proxy]:
    """Stoker in front of ``origin`` on both server configurations: Stoker's own HTTP/1.1
    front (``server = "stoker"``), and granian, whose client speaks HTTP/1.1 or HTTP/2
    with prior knowledge: the same tests run over all three."""
    kind = "stoker" if request.param == "front" else "granian"
    async with running_proxy(origin.url, tmp_path / "data", kind=kind) as running:
        if request.param.endswith("h2c"):
            async with httpx.AsyncClient(base_url=running.url, timeout=30, http1=False,
                                         http2=True) as client:
                yield Proxy(running.url, running.stoker, client, "h2c")
        else:
            yield running


async def drop_stoker_keys(url: str) -> None:
    """Empty the Redis database at ``url`` of Stoker's keys (``stoker:*``)."""
    client = aioredis.Redis.from_url(url)
    try:
        keys = [key async for key in client.scan_iter("stoker:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """Debian's Chromium for a browser test (:mod:`tests.integration.browser_harness`)."""
    async with chromium() as launched:
        yield launched

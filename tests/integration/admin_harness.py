"""Stoker with its admin API, both on real servers, for purge tests; waiting helpers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tests.conftest import serving
from tests.integration.conftest import Proxy, running_proxy

from stoker.admin.app import build_admin_app

TOKEN = "test-admin-token-0123456789"
CACHEABLE = [("cache-control", "public, max-age=600"), ("etag", '"v1"')]
DEADLINE = 30.0  # generous: only a broken build waits this long


@dataclass
class Admin:
    url: str
    client: httpx.AsyncClient  # sends the token

    async def purge(self, **body: Any) -> httpx.Response:
        return await self.client.post("/api/purge", json=body)


@asynccontextmanager
async def purging(origin_url: str, data_dir: Path, *, token: str | None = TOKEN,
                  **settings: Any) -> AsyncIterator[tuple[Proxy, Admin]]:
    """A running proxy in front of ``origin_url`` and its admin API."""
    async with running_proxy(origin_url, data_dir, admin_token=token, **settings) as proxy:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        async with serving(build_admin_app(proxy.stoker)) as url, httpx.AsyncClient(
                base_url=url, headers=headers, timeout=30) as client:
            yield proxy, Admin(url, client)


async def eventually(condition: Callable[[], bool], what: str) -> None:
    """Return once ``condition()`` holds; fail after :data:`DEADLINE` seconds."""
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.005)

    try:
        await asyncio.wait_for(poll(), DEADLINE)
    except TimeoutError:
        raise AssertionError(f"not within {DEADLINE} s: {what}") from None

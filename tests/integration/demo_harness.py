"""``stoker demo`` in process on free ports, for the demo's tests: the ``demo`` fixture."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import free_port, wait_listening

from stoker.app.serving import run_demo
from stoker.config.settings import settings_from

TOKEN = "demo-secret"
PAGES = 30
WAIT = 60.0


@dataclass
class Demo:
    proxy: httpx.AsyncClient
    admin: httpx.AsyncClient
    origin: httpx.AsyncClient
    lines: list[str]
    url: str
    """The proxy's base URL."""

    def announced(self, start: str) -> Callable[[], Awaitable[list[str]]]:
        """A probe for :func:`eventually`: the announced lines starting with ``start``."""
        async def probe() -> list[str]:
            return [line for line in self.lines if line.startswith(start)]

        return probe


@asynccontextmanager
async def running_demo(tmp_path: Path, delay: float = 0.0) -> AsyncIterator[Demo]:
    """``stoker demo`` on free ports, its origin taking ``delay`` seconds a page."""
    ports = {name: free_port() for name in ("listen", "admin_listen", "origin")}
    settings = settings_from({
        "origin": f"http://127.0.0.1:{ports['origin']}", "data_dir": str(tmp_path / "demo"),
        "listen": f"127.0.0.1:{ports['listen']}", "admin_token": TOKEN,
        "admin_listen": f"127.0.0.1:{ports['admin_listen']}"})
    lines: list[str] = []
    stop = asyncio.Event()
    task = asyncio.create_task(run_demo(settings, f"127.0.0.1:{ports['origin']}", pages=PAGES,
                                        delay=delay, announce=lines.append, stop=stop))
    try:
        for port in ports.values():
            await wait_listening(port)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{ports['listen']}") as proxy, \
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{ports['admin_listen']}",
                                  headers={"authorization": f"Bearer {TOKEN}"}) as admin, \
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{ports['origin']}") as origin:
            yield Demo(proxy, admin, origin, lines, f"http://127.0.0.1:{ports['listen']}")
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[Demo]:
    async with running_demo(tmp_path) as running:
        yield running


async def eventually(probe: Callable[[], Awaitable[Any]], what: str) -> Any:
    """Poll the async ``probe`` until it returns something truthy (bounded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not (found := await probe()):
        assert loop.time() < deadline, f"gave up waiting for {what}"
        await asyncio.sleep(0.05)
    return found

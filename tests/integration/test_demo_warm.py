"""``stoker demo`` end to end, in process on free ports: the demo site is warmed at
start with its progress announced, and "Edit this page" purges just that page's tag
so that, after the demo's short debounce, the warmer re-warms that page alone.

Waits are bounded polls of the admin API (no timing assertions); the origin's own
request counts show what reached it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import free_port, wait_listening

from stoker.service import run_demo
from stoker.settings import settings_from

TOKEN = "demo-secret"
PAGES = 30
WAIT = 60.0


@dataclass
class Demo:
    proxy: httpx.AsyncClient
    admin: httpx.AsyncClient
    origin: httpx.AsyncClient
    lines: list[str]

    def announced(self, start: str) -> Callable[[], Awaitable[list[str]]]:
        """A probe for :func:`eventually`: the announced lines starting with ``start``."""
        async def probe() -> list[str]:
            return [line for line in self.lines if line.startswith(start)]

        return probe


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[Demo]:
    ports = {name: free_port() for name in ("listen", "admin_listen", "origin")}
    settings = settings_from({
        "origin": f"http://127.0.0.1:{ports['origin']}", "data_dir": str(tmp_path / "demo"),
        "listen": f"127.0.0.1:{ports['listen']}", "admin_token": TOKEN,
        "admin_listen": f"127.0.0.1:{ports['admin_listen']}"})
    lines: list[str] = []
    stop = asyncio.Event()
    task = asyncio.create_task(run_demo(settings, f"127.0.0.1:{ports['origin']}", pages=PAGES,
                                        delay=0.0, announce=lines.append, stop=stop))
    try:
        for port in ports.values():
            await wait_listening(port)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{ports['listen']}") as proxy, \
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{ports['admin_listen']}",
                                  headers={"authorization": f"Bearer {TOKEN}"}) as admin, \
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{ports['origin']}") as origin:
            yield Demo(proxy, admin, origin, lines)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def eventually(probe: Callable[[], Awaitable[Any]], what: str) -> Any:
    """Poll the async ``probe`` until it returns something truthy (bounded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not (found := await probe()):
        assert loop.time() < deadline, f"gave up waiting for {what}"
        await asyncio.sleep(0.05)
    return found


async def finished_run(admin: httpx.AsyncClient, reason: str) -> dict[str, Any] | None:
    recent = (await admin.get("/api/warm")).json()["recent"]
    return next((run for run in recent if run["reason"] == reason
                 and run["phase"] in ("done", "failed")), None)


async def test_demo_warms_at_start_and_an_edit_rewarms_just_that_page(demo: Demo) -> None:
    initial = await eventually(lambda: finished_run(demo.admin, "manual"), "the start warm")
    summary = await eventually(demo.announced("warmed "), "the summary line")
    before = await demo.proxy.get("/page/7")
    await demo.origin.post("/__stats/reset")

    edited = await demo.proxy.post("/page/7/edit")
    rewarm = await eventually(lambda: finished_run(demo.admin, "purge"), "the re-warm")
    after = await demo.proxy.get("/page/7")
    stats = (await demo.origin.get("/__stats")).json()

    assert initial["phase"] == "done" and initial["counts"]["failed"] == 0
    assert initial["counts"]["total"] > PAGES  # the pages, the home page, the collections
    assert re.fullmatch(rf"warmed {initial['counts']['total']} pages in [\d.]+ s: .* 0 failed.*",
                        summary[0])
    assert "warming: " in "\n".join(demo.lines)
    assert "hit" in before.headers["cache-status"] and "Revision 1." in before.text
    assert (edited.status_code, edited.headers["location"]) == (303, "/page/7/saved?purge=ok")
    assert rewarm["phase"] == "done"
    assert rewarm["counts"]["total"] == rewarm["counts"]["warmed"] == 1
    assert "hit" in after.headers["cache-status"] and "Revision 2." in after.text
    assert stats["paths"] == {"/page/7/edit": 1, "/page/7": 1}  # the warmer's one visit

"""Shutdown: SIGTERM flushes the queued L2 writes first, so a restarted Stoker answers
every page it had answered from cache; a wedged L2 cannot hold a shutdown past
``shutdown_timeout`` (what is abandoned is logged)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO

import httpx
import pytest
from tests.conftest import free_port, serving, wait_listening
from tests.integration.conftest import Origin, running_proxy

import stoker
from stoker.adapters.asgi_proxy import ProxyApp
from stoker.app.stoker import Stoker
from stoker.cache.entry import CacheEntry
from stoker.config.settings import settings_from

SRC = Path(stoker.__file__).resolve().parents[1]
PAGES = 60
BIG = 300 * 1024  # over body_file_threshold: stored as a body file


def is_hit(response: httpx.Response) -> bool:
    return any(part.strip() == "hit" for part in response.headers["cache-status"].split(";"))


async def start_serve(origin: str, port: int, data_dir: Path, log: IO[bytes]
                      ) -> asyncio.subprocess.Process:
    """``stoker serve`` in its own process, answering on ``port``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOKER_")}
    env["PYTHONPATH"] = str(SRC)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stoker", "serve", "--origin", origin,
        "--listen", f"127.0.0.1:{port}", "--admin-listen", f"127.0.0.1:{free_port()}",
        "--data-dir", str(data_dir), env=env, stdout=log, stderr=log)
    try:
        await wait_listening(port, timeout=30)
    except BaseException:
        proc.kill()
        await proc.wait()
        raise
    return proc


async def test_sigterm_right_after_a_burst_keeps_every_page_for_the_restart(
    origin: Origin, tmp_path: Path
) -> None:
    for i in range(PAGES):
        body = b"x" * (BIG if i % 10 == 0 else 2000)
        origin.app.set(f"/page/{i}", headers=[("cache-control", "max-age=3600")], body=body,
                       delay=0.05)
    port, data_dir = free_port(), tmp_path / "data"
    limits = httpx.Limits(max_connections=PAGES)
    with (tmp_path / "stoker.log").open("wb") as log:
        first = await start_serve(origin.url, port, data_dir, log)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits,
                                     timeout=30) as client:
            burst = await asyncio.gather(*(client.get(f"/page/{i}") for i in range(PAGES)))
            first.send_signal(signal.SIGTERM)
            assert [r.status_code for r in burst] == [200] * PAGES
            assert not any(is_hit(r) for r in burst)
            assert await first.wait() == 0
            second = await start_serve(origin.url, port, data_dir, log)
            try:
                again = [await client.get(f"/page/{i}") for i in range(PAGES)]
            finally:
                second.send_signal(signal.SIGTERM)
                await second.wait()
    assert [r.content for r in again] == [r.content for r in burst]
    assert [i for i, r in enumerate(again) if not is_hit(r)] == []
    assert {origin.app.count(f"/page/{i}") for i in range(PAGES)} == {1}


async def failing_put(entry: CacheEntry) -> None:
    raise sqlite3.OperationalError("disk I/O error")


async def hanging_put(entry: CacheEntry) -> None:
    await asyncio.Event().wait()


@pytest.mark.parametrize("wedge", [failing_put, hanging_put], ids=["failing", "hanging"])
async def test_a_wedged_l2_cannot_hold_shutdown_past_shutdown_timeout(
    wedge: Callable[[CacheEntry], Awaitable[None]], origin: Origin, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    for i in range(3):
        origin.app.set(f"/page/{i}", headers=[("cache-control", "max-age=3600")])
    config = settings_from({"origin": origin.url, "data_dir": str(tmp_path / "data"),
                            "shutdown_timeout": "200ms"})
    running = await Stoker.open(config)
    monkeypatch.setattr(running.l2, "put", wedge)
    async with serving(ProxyApp(running.pipeline)) as url, httpx.AsyncClient(base_url=url) as c:
        assert [(await c.get(f"/page/{i}")).status_code for i in range(3)] == [200] * 3
    with caplog.at_level(logging.WARNING):
        await running.close()
    assert ("shutdown_timeout (0.2 s) ran out while flushing queued L2 writes; abandoned 3 "
            "queued L2 operations") in caplog.text
    assert "cache store closed with 3 L2 operations not written (3 put;" in caplog.text
    reopened = await Stoker.open(config)  # every store was closed: the data dir opens again
    await reopened.close()


async def test_a_slow_revalidation_is_abandoned_at_shutdown_timeout_and_the_writes_survive(
    origin: Origin, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # stored already stale (Age > max-age) but within stale-while-revalidate
    origin.app.set("/stale", headers=[("cache-control", "max-age=10, stale-while-revalidate=600"),
                                      ("age", "20")])
    for i in range(3):
        origin.app.set(f"/page/{i}", headers=[("cache-control", "max-age=3600")])
    config = settings_from({"origin": origin.url, "data_dir": str(tmp_path / "data"),
                            "shutdown_timeout": "300ms"})
    running, port = await Stoker.open(config), free_port()
    async with serving(ProxyApp(running.pipeline), port=port) as url, \
            httpx.AsyncClient(base_url=url) as c:
        await c.get("/stale")
        await running.store.flush()
        origin.app.set("/stale", headers=[("cache-control", "max-age=10")], delay=2.0)
        await c.get("/stale")  # served stale; its revalidation now waits on the slow origin
        assert running.pipeline.pending() == 1
        pages = [await c.get(f"/page/{i}") for i in range(3)]
    with caplog.at_level(logging.WARNING):
        await running.close()
    assert ("while draining requests, background revalidations and compressions; abandoned 1 "
            in caplog.text)
    assert "flushing" not in caplog.text
    async with running_proxy(origin.url, tmp_path / "data", port=port) as restarted:
        again = [await restarted.client.get(f"/page/{i}") for i in range(3)]
    assert [is_hit(r) for r in again] == [True] * 3
    assert [r.content for r in again] == [r.content for r in pages]

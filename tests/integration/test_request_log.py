"""The live request log against real servers: Stoker's front (fast-path hits included)
and granian, the admin API's ``GET /api/log``, ``stoker serve`` and ``stoker log`` run
as an operator runs them."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.integration.admin_harness import CACHEABLE, TOKEN, Admin, eventually, purging
from tests.integration.conftest import Origin, Proxy
from tests.integration.serve_process import Serve, eventually_two
from tests.integration.warm_site import stoker_env

from stoker.admin.client import sse_events

PIPE = asyncio.subprocess.PIPE
DEADLINE = 30.0


@asynccontextmanager
async def watching(admin: Admin, proxy: Proxy, **params: str
                   ) -> AsyncIterator[asyncio.Queue[tuple[str, Any]]]:
    """``GET /api/log?params`` open; its events in a queue, once the watch is registered."""
    events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    tap = proxy.stoker.pipeline.tap
    before = tap.watches

    async def read() -> None:
        async with admin.client.stream("GET", "/api/log", params=params) as response:
            assert response.status_code == 200
            assert response.headers["cache-control"] == "no-store"
            lines: list[str] = []
            async for line in response.aiter_lines():
                lines.append(line)
                if not line:
                    for event in sse_events(lines):
                        await events.put(event)
                    lines = []

    reading = asyncio.create_task(read())
    try:
        await eventually(lambda: tap.watches > before or reading.done(), "the watch opened")
        yield events
    finally:
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
    await eventually(lambda: tap.watches == before, "the watch closed with its stream")


async def requests_seen(events: asyncio.Queue[tuple[str, Any]], count: int
                        ) -> list[dict[str, Any]]:
    """The next ``count`` request events (the hello skipped)."""
    seen: list[dict[str, Any]] = []
    while len(seen) < count:
        event, data = await asyncio.wait_for(events.get(), DEADLINE)
        if event == "request":
            seen.append(data)
    return seen


@pytest.mark.parametrize("kind", ["stoker", "granian"])
async def test_a_watcher_sees_a_miss_then_a_hit_of_its_path_only(
        origin: Origin, tmp_path: Path, kind: str) -> None:
    origin.app.set("/blog/a", headers=CACHEABLE, body=b"a" * 100)
    origin.app.set("/shop", headers=CACHEABLE, body=b"s")
    async with purging(origin.url, tmp_path / "d", kind=kind,
                       log_redact_query=("token",)) as (proxy, admin), \
            watching(admin, proxy, path="/blog") as events:
        hello = await asyncio.wait_for(events.get(), DEADLINE)
        await proxy.client.get("/shop")  # filtered out
        await proxy.client.get("/blog/a?token=secret&x=1")
        await proxy.client.get("/blog/a?token=secret&x=1")
        miss, hit = await requests_seen(events, 2)
    assert hello == ("hello", {"filter": "path /blog*", "processes": 1, "shown": 1})
    assert (miss["outcome"], hit["outcome"]) == ("miss", "hit")
    assert miss["path"] == hit["path"] == "/blog/a?token=REDACTED&x=1"
    assert (miss["status"], miss["bytes"], miss["method"]) == (200, 100, "GET")
    assert (hit["status"], hit["bytes"], hit["client"]) == (200, 100, "127.0.0.1")
    assert miss["host"] == hit["host"] == proxy.url.removeprefix("http://")
    assert miss["duration_ms"] > 0


async def test_a_watcher_of_502s_sees_only_them(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/ok", body=b"ok")
    origin.app.set("/broken", status=502, body=b"bad gateway")
    async with purging(origin.url, tmp_path / "d", kind="stoker") as (proxy, admin), \
            watching(admin, proxy, status="502", client="127.0.0.0/8") as events:
        for path in ("/ok", "/broken", "/ok"):
            await proxy.client.get(path)
        await proxy.client.get("/broken")
        first, second = await requests_seen(events, 2)
    assert [(r["path"], r["status"], r["outcome"]) for r in (first, second)] == [
        ("/broken", 502, "pass")] * 2
    assert events.empty()


async def test_a_bad_filter_is_refused_naming_its_field(origin: Origin,
                                                        tmp_path: Path) -> None:
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        answer = await admin.client.get("/api/log", params={"status": "6xx"})
        unauthorized = await httpx.AsyncClient(base_url=admin.url).get("/api/log")
    assert answer.status_code == 400 and answer.json()["field"] == "status"
    assert unauthorized.status_code == 401
    assert proxy.stoker.pipeline.tap.watches == 0


def calls_into(module_file: str) -> tuple[Callable[[Any, str, Any], None], list[str]]:
    """A profile hook counting the Python calls of functions defined in ``module_file``."""
    called: list[str] = []

    def hook(frame: Any, event: str, _: Any) -> None:
        if event == "call" and frame.f_code.co_filename.endswith(module_file):
            called.append(frame.f_code.co_name)

    return hook, called


async def test_unwatched_requests_build_no_record(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/p", headers=CACHEABLE)
    async with purging(origin.url, tmp_path / "d", kind="stoker") as (proxy, admin):
        hook, called = calls_into("proxy/log_record.py")
        sys.setprofile(hook)
        try:
            for _ in range(3):  # a miss, then fast-path hits
                await proxy.client.get("/p")
            unwatched = list(called)
            async with watching(admin, proxy) as events:
                await proxy.client.get("/p")
                await requests_seen(events, 1)
        finally:
            sys.setprofile(None)
    assert unwatched == []
    assert "fast_hit" in called  # the hook sees the record built once someone watches


def serve_one(origin: Origin, tmp_path: Path) -> Serve:
    """``stoker serve`` of one process, with a token, not warming."""
    serve = Serve(origin, tmp_path, "--processes", "1", "--admin-token", TOKEN)
    serve.config.write_text('warm_on_start = "never"\n')
    return serve


async def log_cli(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stoker", "log", *args, env=stoker_env(), stdout=PIPE,
        stderr=PIPE)


async def test_stoker_log_json_tails_a_running_serve(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/p", headers=CACHEABLE, body=b"p" * 10)
    origin.app.set("/ping", body=b"pong")
    async with serve_one(origin, tmp_path) as serve, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.port}") as client:
        proc = await log_cli("--json", "--path", "/p", "--admin-url",
                             f"http://127.0.0.1:{serve.admin_port}", "--admin-token", TOKEN)
        assert proc.stdout is not None
        first = asyncio.create_task(proc.stdout.readline())
        while not first.done():  # until the watch is open: the pings show
            await client.get("/ping")
            await asyncio.wait({first}, timeout=0.05)
        await client.get("/p")
        await client.get("/p")
        lines = [json.loads(first.result())]
        while [line["outcome"] for line in lines if line["path"] == "/p"] != ["miss", "hit"]:
            lines.append(json.loads(await asyncio.wait_for(proc.stdout.readline(), DEADLINE)))
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), DEADLINE)
    assert (proc.returncode, err) == (0, b"")
    assert {line["path"] for line in lines} == {"/ping", "/p"}
    assert lines[-1]["bytes"] == 10 and lines[-1]["status"] == 200


async def test_stoker_log_says_what_is_wrong(origin: Origin, tmp_path: Path) -> None:
    async with serve_one(origin, tmp_path) as serve:
        admin = f"http://127.0.0.1:{serve.admin_port}"
        wrong = await log_cli("--admin-url", admin, "--admin-token", "not-the-token")
        bad = await log_cli("--status", "5x", "--admin-url", admin, "--admin-token", TOKEN)
        results = [await asyncio.wait_for(p.communicate(), DEADLINE) for p in (wrong, bad)]
    gone = await log_cli("--admin-url", admin, "--admin-token", TOKEN)
    _, gone_err = await asyncio.wait_for(gone.communicate(), DEADLINE)
    assert wrong.returncode == 1 and b"refused the token" in results[0][1]
    assert bad.returncode == 2 and b"--status: expected a code" in results[1][1]
    assert gone.returncode == 1 and b"cannot reach Stoker's admin API" in gone_err


async def test_two_processes_show_every_request(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/n", body=b"n")
    serve = Serve(origin, tmp_path, "--processes", "2", "--admin-token", TOKEN)
    serve.config.write_text('warm_on_start = "never"\n')
    marker = tmp_path / "data" / "log-watched"
    async with serve, httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{serve.admin_port}", timeout=DEADLINE,
            headers={"authorization": f"Bearer {TOKEN}"}) as admin:
        await eventually_two(serve)
        async with admin.stream("GET", "/api/log", params={"path": "/n"}) as response:
            lines = response.aiter_lines()
            hello = [await anext(lines) for _ in range(3)]
            await eventually(marker.exists, "the first process marked the log watched")
            await asyncio.sleep(1.5)  # the other looks for the mark every second
            for i in range(40):  # each on a connection of its own: the kernel spreads them
                async with httpx.AsyncClient() as client:
                    await client.get(f"http://127.0.0.1:{serve.port}/n?i={i}")
            seen: set[str] = set()
            read: list[str] = []
            while len(seen) < 40:
                read.append(await asyncio.wait_for(anext(lines), DEADLINE))
                seen |= {data["path"] for event, data in sse_events(read)
                         if event == "request"}
        await eventually(lambda: not marker.exists(), "the mark gone with the watcher")
    assert list(sse_events(hello)) == [
        ("hello", {"filter": "path /n*", "processes": 2, "shown": 2})]
    assert seen == {f"/n?i={i}" for i in range(40)}  # ~half answered by the other process


async def test_a_request_the_core_refuses_shows_as_an_error(origin: Origin,
                                                            tmp_path: Path) -> None:
    async with purging(origin.url, tmp_path / "d", kind="stoker") as (proxy, admin), \
            watching(admin, proxy, status="4xx") as events:
        port = int(proxy.url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /twice?key=k HTTP/1.1\r\nhost: a.test\r\nhost: b.test\r\n\r\n")
        assert (await asyncio.wait_for(reader.readline(), DEADLINE)).startswith(
            b"HTTP/1.1 400")
        writer.close()
        refused, = await requests_seen(events, 1)
    assert (refused["outcome"], refused["reason"], refused["status"]) == (
        "error", "bad-request", 400)
    assert (refused["host"], refused["path"], refused["client"]) == (
        "a.test", "/twice?key=REDACTED", "127.0.0.1")  # redacted by default


async def test_stoker_log_prints_readable_lines(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/t", headers=CACHEABLE, body=b"t" * 7)
    async with serve_one(origin, tmp_path) as serve, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.port}") as client:
        proc = await log_cli("--outcome", "miss", "--admin-url",
                             f"http://127.0.0.1:{serve.admin_port}", "--admin-token", TOKEN)
        assert proc.stdout is not None and proc.stderr is not None
        hello = await asyncio.wait_for(proc.stderr.readline(), DEADLINE)
        await client.get("/t")
        await client.get("/t")  # a hit: not shown
        shown = await asyncio.wait_for(proc.stdout.readline(), DEADLINE)
        proc.send_signal(signal.SIGINT)
        rest, err = await asyncio.wait_for(proc.communicate(), DEADLINE)
    assert hello == b"showing outcome miss, Ctrl-C to stop\n"
    assert (proc.returncode, rest, err) == (0, b"", b"")
    words = shown.decode().split()
    assert words[1:] == ["127.0.0.1", "GET", f"127.0.0.1:{serve.port}/t", "200", "miss",
                         words[-2], "7B"]
    assert words[-2].endswith("ms")

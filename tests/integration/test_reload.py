"""``SIGHUP`` reloads ``stoker.toml`` in a running ``stoker serve``: new rules at once, the
cache and open connections kept, what needs a restart named in the log, a broken file
refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from tests.integration.conftest import Origin
from tests.integration.serve_process import DEADLINE, Serve, eventually_two

QUIET = 'warm_on_start = "never"\n'
FIVE_MINUTES = QUIET + '[[rule]]\npath = "/"\nttl = "5m"\n'
NEVER = '[[rule]]\npath = "/news"\nbypass = true\n[[rule]]\npath = "/"\nttl = "5m"\n'


async def test_a_reload_applies_new_rules_keeping_the_cache_and_the_connection(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/news", body=b"news")  # no Cache-Control: the rules decide
    origin.app.set("/page", body=b"page")
    serve = Serve(origin, tmp_path)
    serve.config.write_text(FIVE_MINUTES)
    async with serve, httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.port}",
                                        timeout=DEADLINE) as client:
        for path in ("/news",) * 4 + ("/page", "/page"):  # /news's head is known to the front
            await client.get(path)
        assert (origin.app.count("/news"), origin.app.count("/page")) == (1, 1)
        log = await serve.reload(QUIET + 'keep = "2h"\nl1_max_bytes = "64MiB"\n' + NEVER,
                                 "reloaded rules")
        news = [await client.get("/news") for _ in range(2)]  # the same connection
        page = await client.get("/page")
    assert "reloaded keep: 3600.0 -> 7200.0" in log
    assert "not reloaded l1_max_bytes (needs a restart)" in log
    assert origin.app.count("/news") == 3  # bypassed from the reload on
    assert all("bypass" in response.headers["cache-status"] for response in news)
    assert "hit" in page.headers["cache-status"]  # the cache kept across the reload
    assert origin.app.count("/page") == 1


async def test_a_broken_file_is_refused_and_the_process_goes_on(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/page", body=b"page")
    serve = Serve(origin, tmp_path)
    serve.config.write_text(FIVE_MINUTES)
    async with serve, httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.port}",
                                        timeout=DEADLINE) as client:
        await client.get("/page")
        log = await serve.reload(QUIET + 'keep = "soon"\n', "configuration not reloaded")
        still = await client.get("/page")
        again = await serve.reload(FIVE_MINUTES, "reload: nothing changed")
    assert "keep" in log.split("configuration not reloaded")[1].splitlines()[0]
    assert "hit" in still.headers["cache-status"] and origin.app.count("/page") == 1
    assert "nothing changed" in again


async def test_each_process_names_itself_in_its_reload_lines(
        origin: Origin, tmp_path: Path) -> None:
    serve = Serve(origin, tmp_path, "--processes", "2")
    serve.config.write_text(FIVE_MINUTES)
    async with serve:
        pids = await eventually_two(serve)
        await serve.reload(QUIET + 'keep = "2h"\n' + NEVER, "process 2 of 2)")
        for _ in range(int(DEADLINE / 0.05)):
            said = [line for line in serve.lines() if "reloaded keep: 3600.0 -> 7200.0" in line]
            if len(said) == 2:
                break
            await asyncio.sleep(0.05)
    assert sorted(line.rsplit("(", 1)[1] for line in said) == sorted(
        f"pid {pid}, process {_index_of(serve, pid)} of 2)" for pid in pids)


def _index_of(serve: Serve, pid: int) -> int:
    """Which of ``serve``'s processes ``pid`` is (its start line says)."""
    (line,) = [line for line in serve.lines() if ": proxying " in line and f"pid {pid}," in line]
    return int(line.rsplit("process ", 1)[1].split(" ")[0])

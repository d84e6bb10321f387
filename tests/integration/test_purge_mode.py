"""Purges from CMS clients on a real ``stoker serve``: ``purge_mode``, ``rewarm_now_max``,
``rewarm_also``.

A CMS's purge client sends a plain ``PURGE`` naming the edited page only.  With
``purge_mode = "soft"`` that purge marks the page stale: the next visitor gets the old
copy at once, never waiting on a slow origin, and a later one the new page.  A purge of
fewer than ``rewarm_now_max`` URLs is re-warmed at once, not ``rewarm_delay`` later.
With ``rewarm_also = ["/"]`` the home page, which lists the edited post but is never
named by the CMS, is purged and re-warmed with it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from tests.integration.admin_harness import TOKEN, Admin, purging
from tests.integration.conftest import Origin
from tests.integration.serve_process import DEADLINE, Serve
from typer.testing import CliRunner

from stoker.cli.main import app as cli_app

CACHEABLE = [("cache-control", "public, max-age=600"), ("etag", '"v1"')]
SLOW = 2.0
"""Seconds the origin takes to render the edited page."""
REWARM_DELAY = 30
REWARMED_WITHIN = 3.0


@asynccontextmanager
async def serving(origin: Origin, tmp_path: Path, extra: str = ""
                  ) -> AsyncIterator[tuple[Serve, httpx.AsyncClient]]:
    """``stoker serve`` for its own listener as the site, PURGE allowed from loopback, the
    re-warm debounced by :data:`REWARM_DELAY` seconds, ``extra`` in its config file."""
    serve = Serve(origin, tmp_path)
    serve.config.write_text(
        f'site_url = "http://127.0.0.1:{serve.port}"\npurge_allow = ["127.0.0.1"]\n'
        f'warm_on_start = "never"\nrefresh_interval = 0\nrewarm_delay = {REWARM_DELAY}\n'
        + extra)
    async with serve, httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.port}",
                                        timeout=DEADLINE) as client:
        yield serve, client


async def within(seconds: float, condition: Callable[[], object], what: str) -> None:
    """Return once ``condition()`` holds (polled every 5 ms); fail after ``seconds``."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > seconds:
            raise AssertionError(f"not within {seconds} s: {what}")
        await asyncio.sleep(0.005)


def is_hit(response: httpx.Response) -> bool:
    return "hit" in response.headers["cache-status"].split("; ")


async def test_with_purge_mode_soft_a_plain_purge_serves_the_old_copy_at_once(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/post/1", headers=CACHEABLE, body=b"old title")
    async with serving(origin, tmp_path, 'purge_mode = "soft"\n') as (_, client):
        await client.get("/post/1")
        origin.app.set("/post/1", headers=[("cache-control", "public, max-age=600")],
                       body=b"new title", delay=SLOW)
        answer = (await client.request("PURGE", "/post/1")).json()
        started = time.monotonic()
        right_after = await client.get("/post/1")
        latency = time.monotonic() - started
        latest: list[bytes] = []

        async def read() -> None:
            latest.append((await client.get("/post/1")).content)

        for _ in range(int(DEADLINE / 0.2)):
            await read()
            if latest[-1] == b"new title":
                break
            await asyncio.sleep(0.2)
    assert answer["soft"] is True and answer["purged"] == 1
    assert right_after.text == "old title" and latency < SLOW / 2
    assert "detail=stale-while-revalidate" in right_after.headers["cache-status"]
    assert latest[-1] == b"new title"


async def test_an_explicit_hard_purge_stays_hard_under_purge_mode_soft(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/post/1", headers=CACHEABLE, body=b"old title")
    async with serving(origin, tmp_path, 'purge_mode = "soft"\n') as (_, client):
        await client.get("/post/1")
        origin.app.set("/post/1", headers=CACHEABLE, body=b"new title")
        answer = (await client.request("PURGE", "/post/1",
                                       headers={"x-purge-soft": "0"})).json()
        after = await client.get("/post/1")
        refused = await client.request("PURGE", "/post/1", headers={"x-purge-soft": "maybe"})
    assert answer["soft"] is False and after.text == "new title"
    assert refused.status_code == 400 and "x-purge-soft" in refused.json()["error"]


def cli_purge(admin: Admin, *flags: str) -> str:
    """``stoker purge --url /post/1 FLAGS`` against ``admin``: its output (exit code 0)."""
    result = CliRunner().invoke(cli_app, ["purge", "--url", "/post/1", *flags],
                                env={"STOKER_CONFIG": "", "STOKER_ADMIN_URL": admin.url,
                                     "STOKER_ADMIN_TOKEN": TOKEN})
    assert result.exit_code == 0, result.output
    return result.output


async def test_an_api_or_cli_purge_without_soft_follows_purge_mode(origin: Origin,
                                                                   tmp_path: Path) -> None:
    origin.app.set("/post/1", headers=CACHEABLE, body=b"old title")
    async with purging(origin.url, tmp_path, purge_mode="soft") as (proxy, admin):
        await proxy.client.get("/post/1")
        plain = (await admin.purge(urls=[f"{proxy.url}/post/1"])).json()
        hard = (await admin.purge(urls=[f"{proxy.url}/post/1"], soft=False)).json()
        outputs = [await asyncio.to_thread(cli_purge, admin, *flags)
                   for flags in ((), ("--hard",), ("--soft",))]
    assert (plain["soft"], plain["purged"], hard["soft"]) == (True, 1, False)
    assert ["made stale" in out for out in outputs] == [True, False, True]


async def test_purge_mode_is_taken_on_reload(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/post/1", headers=CACHEABLE, body=b"old title")
    async with serving(origin, tmp_path) as (serve, client):
        before = (await client.request("PURGE", "/post/1")).json()
        text = serve.config.read_text()
        await serve.reload(text + 'purge_mode = "soft"\n', "reloaded purge_mode")
        after = (await client.request("PURGE", "/post/1")).json()
    assert (before["soft"], after["soft"]) == (False, True)


async def test_a_single_url_purge_is_rewarmed_at_once_not_after_rewarm_delay(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/post/1", headers=CACHEABLE, body=b"old title")
    async with serving(origin, tmp_path) as (_, client):
        await client.get("/post/1")
        origin.app.set("/post/1", headers=CACHEABLE, body=b"new title")
        purged_at = time.monotonic()
        assert (await client.request("PURGE", "/post/1")).json()["purged"] == 1
        await within(REWARMED_WITHIN, lambda: origin.app.count("/post/1") == 2,
                     "the purged page re-warmed at the origin")
        took = time.monotonic() - purged_at
        visited = await client.get("/post/1")
    assert took < REWARMED_WITHIN and visited.text == "new title" and is_hit(visited)


async def test_rewarm_also_purges_and_rewarms_the_home_page_with_a_post(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/", headers=CACHEABLE, body=b"<li>old title</li>")
    origin.app.set("/post/1", headers=CACHEABLE, body=b"old title")
    async with serving(origin, tmp_path, 'rewarm_also = ["/"]\n') as (serve, client):
        await client.get("/")
        await client.get("/post/1")
        origin.app.set("/", headers=CACHEABLE, body=b"<li>new title</li>")
        origin.app.set("/post/1", headers=CACHEABLE, body=b"new title")
        answer = (await client.request("PURGE", "/post/1")).json()
        await within(DEADLINE, lambda: origin.app.count("/") == 2, "the home page re-warmed")
        home = await client.get("/")
    assert answer["purged"] == 2
    assert f"http://127.0.0.1:{serve.port}/" in answer["urls"]
    assert home.text == "<li>new title</li>" and is_hit(home)

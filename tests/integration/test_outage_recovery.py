"""Warm work survives an origin outage, on a real ``stoker serve`` and a test origin that
is switched down and back up, with nobody asking Stoker for anything: URLs whose visits
failed while the origin was down (a 502 from a web server whose PHP stopped; a refused
connection) are warmed once it answers again, and a full run whose discovery failed
waits, says so, and completes after the origin is back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import MutableMapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tests.conftest import free_port, serving
from tests.integration.warm_site import (
    SITE,
    Node,
    SiteOrigin,
    is_hit,
    page,
    serve_node,
    warm_cli,
)

DEADLINE = 90.0
PAGES = 4
RETRY = {"outage_retry": 1.0, "outage_retry_max": 4.0}
Message = MutableMapping[str, Any]


@dataclass
class SwitchedOrigin(SiteOrigin):
    """The warm test site, switched down: requests under ``down_under`` answer ``down``
    (a 502, as a web server in front of a stopped PHP answers) until it is ``None``."""

    down: int | None = None
    down_under: str = "/"

    async def __call__(self, scope: Message, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.down is not None \
                and scope["path"].startswith(self.down_under):
            self.hits[f"down:{scope['path']}"] += 1
            await send({"type": "http.response.start", "status": self.down,
                        "headers": [(b"content-length", b"4")]})
            await send({"type": "http.response.body", "body": b"down"})
            return
        await super().__call__(scope, receive, send)


def node(origin_url: str, directory: Path, **settings: Any) -> AbstractAsyncContextManager[Node]:
    """``stoker serve`` for the site at ``origin_url``, outage retries 1 s doubling to 4 s."""
    return serve_node(origin_url, directory, **RETRY, **settings)


async def eventually(check: Any, what: str, log: Path) -> Any:
    end = time.monotonic() + DEADLINE
    while True:
        found = await check()
        if found:
            return found
        assert time.monotonic() < end, f"{what}: not within {DEADLINE:g} s\n{log.read_text()}"
        await asyncio.sleep(0.1)


async def run_of(admin: httpx.AsyncClient, run_id: int) -> dict[str, Any]:
    answer: dict[str, Any] = (await admin.get(f"/api/warm/{run_id}")).json()
    return answer


async def ended(stoker: Node, run_id: int) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        run = await run_of(stoker.admin, run_id)
        return run if run["phase"] in ("done", "failed", "cancelled") else None
    found: dict[str, Any] = await eventually(check, f"warm run {run_id} ended", stoker.log)
    return found


async def recovered(stoker: Node, urls: set[str]) -> dict[str, Any]:
    """The ``recovery`` run that warmed ``urls``, once it is done."""
    async def check() -> list[dict[str, Any]] | None:
        listing = (await stoker.admin.get("/api/warm")).json()
        runs = [run for run in listing["recent"] if run["reason"] == "recovery"]
        return runs if any(run["phase"] == "done" for run in runs) else None
    runs: list[dict[str, Any]] = await eventually(check, "a recovery run done", stoker.log)
    assert len(runs) == 1, runs  # one run however many processes saw the origin back
    [run] = runs
    assert run["counts"]["total"] == len(urls) and run["counts"]["failed"] == 0
    return run


async def all_hits(proxy: httpx.AsyncClient, paths: list[str]) -> bool:
    return all([is_hit(await proxy.get(path)) for path in paths])


PATHS = [page(n) for n in range(1, PAGES + 1)]
URLS = {f"{SITE}{path}" for path in PATHS}


async def test_a_full_run_while_php_answers_502_is_warmed_after_it_is_back(
        tmp_path: Path) -> None:
    site = SwitchedOrigin(PAGES, down=502, down_under="/page/")
    async with serving(site) as origin_url, node(origin_url, tmp_path,
                                                 processes=2) as stoker:
        started = (await stoker.admin.post("/api/warm", json={})).json()["run"]["id"]
        run = await ended(stoker, started)
        assert (run["phase"], run["counts"]["failed"]) == ("done", PAGES), run
        assert set(run["failed_urls"]) == URLS
        site.down = None
        back = time.monotonic()
        for n in range(PAGES + 1, PAGES + 5):  # visitors' pages answer (either process)
            await stoker.proxy.get(page(n))
        await recovered(stoker, URLS)
        took = time.monotonic() - back
        print(f"502 outage: the failed URLs warmed {took:.1f} s after the origin was back")
        assert await all_hits(stoker.proxy, PATHS)  # asked only now: hits, warmed before


async def test_urls_that_failed_while_the_origin_refused_are_warmed_when_it_answers(
        tmp_path: Path) -> None:
    site = SwitchedOrigin(PAGES)
    port = free_port()
    async with node(f"http://127.0.0.1:{port}", tmp_path) as stoker:
        started = await stoker.admin.post("/api/warm", json={"urls": sorted(URLS)})
        run = await ended(stoker, started.json()["run"]["id"])
        assert (run["phase"], run["counts"]["failed"]) == ("done", PAGES), run
        async with serving(site, port=port):
            back = time.monotonic()
            home = await stoker.proxy.get("/")  # a visitor: the breaker's probe closes it
            await recovered(stoker, URLS)
            took = time.monotonic() - back
            print(f"refused: the failed URLs warmed {took:.1f} s after the origin was back "
                  f"(the visitor got {home.status_code})")
            assert await all_hits(stoker.proxy, PATHS)


async def test_a_run_whose_discovery_failed_is_retried_and_completes_after_the_outage(
        tmp_path: Path) -> None:
    site = SwitchedOrigin(PAGES, down=502)
    async with serving(site) as origin_url, node(origin_url, tmp_path) as stoker:
        cli = asyncio.create_task(warm_cli(stoker.admin_url, "--wait"))

        async def retried() -> dict[str, Any] | None:
            listing = (await stoker.admin.get("/api/warm")).json()
            run = listing["active"]
            return run if run and "(try 3)" in (run["error"] or "") else None

        waiting = await eventually(retried, "a third discovery", stoker.log)
        assert waiting["phase"] == "collect"
        assert "discovery failed (try 3)" in waiting["error"] and "answered 502" in \
            waiting["error"] and "trying again in 4 s" in waiting["error"]
        site.down = None
        code, out = await asyncio.wait_for(cli, DEADLINE)
        run = await ended(stoker, waiting["id"])
    assert code == 0, out
    assert "discovery failed (try 2)" in out  # warm --wait said why it waits
    assert (run["phase"], run["error"], run["counts"]["warmed"]) == ("done", None, PAGES + 1)

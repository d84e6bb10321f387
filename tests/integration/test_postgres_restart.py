"""PostgreSQL restarted under running ``stoker serve`` nodes (``database_url`` on a server
of the test's own): they keep serving, from cache and from the origin, with no 5xx the
database caused; ``/readyz`` says not ready while it is down and ready once it is back;
the warm run in progress finishes with every URL visited and counted once, no job left
``running``; deadlines run again after the restart.  A purge made while it is down is
answered (in force on its node, ``relayed: false``), reaches the other node and the audit
log once the database answers."""

from __future__ import annotations

import asyncio
from collections import Counter
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import httpx
from tests.integration.private_postgres import PrivatePostgres, private_postgres
from tests.integration.test_warmer_kill import warm_until_settled
from tests.integration.warm_site import (
    DEADLINE,
    SITE_HOST,
    Node,
    SiteOrigin,
    is_hit,
    page,
    serve_node,
    site_origin,
)

from stoker.backends import open_database
from stoker.clock import SystemClock
from stoker.config.settings import settings_from

__all__ = ["private_postgres"]  # the fixture, imported to be found

PAGES = 300
RESTART_AFTER = 60  # URLs settled before PostgreSQL goes down
HELD, UNCACHED, PURGED = "/page/9001", "/page/9002", "/page/9003"  # not in the sitemap
TOTAL = PAGES + 3
"""The run's URLs: the sitemap's pages and its home page, then the two purged ones (one
before the outage, one during it) joining it as re-warms once PostgreSQL is back."""
RETRIED_WITHIN = 15.0
"""Seconds after the restart by which the ticker has run the deadline due meanwhile: it
tries a store that failed again within seconds (at most ``max_sleep``, 30 s, apart)."""


def node(origin_url: str, directory: Path, **settings: Any) -> AbstractAsyncContextManager[Node]:
    """A :class:`Node` for the site at ``origin_url``, its data and log in ``directory``."""
    return serve_node(origin_url, directory, timeout=DEADLINE, **settings)


async def eventually(check: Any, what: str, timeout: float = DEADLINE) -> Any:
    """``await check()`` until it returns something true; that."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        found = await check()
        if found:
            return found
        assert loop.time() < end, f"{what}: not within {timeout:g} s"
        await asyncio.sleep(0.05)


async def ready(admin: httpx.AsyncClient) -> int:
    return (await admin.get("/readyz")).status_code


async def run_ended(admin: httpx.AsyncClient, run_id: int) -> dict[str, Any] | None:
    run: dict[str, Any] = (await admin.get(f"/api/warm/{run_id}")).json()
    return run if run["phase"] in ("done", "failed", "cancelled") else None


async def job_states(database_url: str) -> tuple[dict[str, int], Counter[int]]:
    """Jobs per state on ``database_url`` (as ``stoker jobs counts`` reads them), and how
    many done jobs took how many attempts."""
    stores = await open_database(settings_from({"database_url": database_url}), SystemClock())
    queue = stores.queue
    try:
        done = await queue.list("done", limit=PAGES * 2)
        return ({count.state: count.count for count in await queue.counts()},
                Counter(job.attempts for job in done))
    finally:
        await stores.aclose()


async def test_nodes_serve_through_a_postgresql_restart_and_their_warm_run_loses_nothing(
        private_postgres: PrivatePostgres, tmp_path: Path) -> None:
    """Two nodes, a full run going; a purge arms the re-warm due while PostgreSQL is down;
    PostgreSQL stopped for two seconds and more, then started again."""
    pg = private_postgres
    site = SiteOrigin(PAGES, delay=0.03)
    settings = {"database_url": pg.url, "rewarm_delay": 0.5, "rewarm_max_wait": 1,
                "rewarm_now_max": 0}  # the purge's re-warm waits: due while PG is down
    async with site_origin(site) as origin_url, \
            node(origin_url, tmp_path / "a", **settings) as a, \
            node(origin_url, tmp_path / "b", **settings) as b:
        cached = [await n.proxy.get(path) for n in (a, b) for path in (HELD, PURGED)]
        b_held = await stored_at(b.admin, HELD)
        run_id, settled = await warm_until_settled(a.admin_url, RESTART_AFTER)
        before = await a.admin.post("/api/purge", json={"urls": [f"http://{SITE_HOST}{PURGED}"]})
        await eventually(lambda: pending_rewarm(a.admin), "the purged URL recorded")
        await pg.stop()
        down = [await n.proxy.get(path) for n in (a, b) for path in (HELD, UNCACHED, UNCACHED)]
        health = [(await n.admin.get("/healthz")).status_code for n in (a, b)]
        readiness = [await ready(n.admin) for n in (a, b)]
        purge_down = await a.admin.post("/api/purge",
                                        json={"urls": [f"http://{SITE_HOST}{HELD}"]})
        site.gate.clear()  # held visits: the run cannot end before the re-warm joins it
        await asyncio.sleep(1.0)
        await pg.start()
        await eventually(lambda: is_total(a.admin, run_id, TOTAL),
                         "the re-warms due meanwhile joined the run", RETRIED_WITHIN)
        site.gate.set()
        for n in (a, b):
            await eventually(lambda n=n: is_ready(n.admin), "ready again")
        await eventually(lambda: gone(b.admin, HELD, b_held), "A's purge relayed to B")
        audited = await eventually(lambda: audit_of(a.admin, HELD), "the purge audited late")
        run = await eventually(lambda: run_ended(a.admin, run_id), "the run ended")
        after = await a.proxy.get(HELD)
        states, attempts = await job_states(pg.url)
    assert settled < PAGES + 1, "the run ended before the restart: nothing was tested"
    assert b_held, "B held no copy of the page purged during the outage: nothing relayed"
    assert [r.status_code for r in [*cached, before]] == [200] * 5
    assert [r.status_code for r in down] == [200] * 6, [r.text for r in down]
    assert [is_hit(r) for r in down] == [True, False, True] * 2
    assert health == [200, 200] and readiness == [503, 503]
    assert purge_down.status_code == 200, purge_down.text  # in force here, relayed later
    assert (purge_down.json()["relayed"], purge_down.json()["unconfirmed"]) == (False, ["*"])
    assert audited["outcome"] == "ok" and audited["count"] == 1, audited
    # A's purge held: the old copy is gone; its re-warm (recorded once PostgreSQL answered)
    # visited once, on A or on B, and A answers from that visit's copy or fetches again
    assert site.hits[HELD] == 3 + (not is_hit(after)), (site.hits[HELD], after.headers)
    counts = run["counts"]
    assert run["phase"] == "done", run
    assert (counts["total"], counts["warmed"], counts["settled"]) == (TOTAL,) * 3, counts
    assert counts["failed"] == counts["gave_up"] == 0, counts
    seen = site.page_hits()
    assert {page(n) for n in range(1, PAGES + 1)} <= set(seen)
    assert max(seen[page(n)] for n in range(1, PAGES + 1)) <= 2  # a visit cut off, redone
    assert seen[PURGED] == 3  # A's and B's misses, then the re-warm after the restart
    assert set(states) == {"done"}, states  # none left running, none dead
    assert set(attempts) == {1}, attempts  # the outage used up no attempt (nor a lease)


async def stored_at(admin: httpx.AsyncClient, path: str) -> set[float]:
    """When each variant the node holds of ``path`` was stored."""
    found = (await admin.get("/api/entry", params={"url": path})).json()["keys"]
    return {variant["stored_at"] for key in found for variant in key["variants"]}


async def gone(admin: httpx.AsyncClient, path: str, old: set[float]) -> bool:
    """Whether the node holds none of the ``old`` copies of ``path`` now."""
    return not await stored_at(admin, path) & old


async def audit_of(admin: httpx.AsyncClient, path: str) -> dict[str, Any] | None:
    """The newest audit record of a purge of ``path``, if any."""
    records = (await admin.get("/api/audit")).json()["records"]
    return next((one for one in records if one["action"] == "purge"
                 and any(url.endswith(path) for url in one["target"].get("urls", []))), None)


async def pending_rewarm(admin: httpx.AsyncClient) -> bool:
    return bool((await admin.get("/api/status")).json()["warm"]["pending_rewarm"])


async def is_total(admin: httpx.AsyncClient, run_id: int, total: int) -> bool:
    return bool((await admin.get(f"/api/warm/{run_id}")).json()["counts"]["total"] == total)


async def is_ready(admin: httpx.AsyncClient) -> bool:
    return await ready(admin) == 200

"""Two nodes on one database_url share a warm run: its jobs are claimed from the queue in
PostgreSQL, so every URL is visited once, by one node or the other; a node killed
mid-run leaves the rest to the other."""

from __future__ import annotations

from pathlib import Path

from tests.integration.test_warmer_kill import PAST_LEASES, killed_mid_run
from tests.integration.warm_site import SiteOrigin, page, site_origin, warming
from tests.job_backends import pg_schema, schema_url

from stoker.clock import FakeClock, SystemClock

PAGES = 300
SPLIT_PAGES = 2_000
"""The run split across the nodes: the issue's 2,000 URLs (the kill test keeps 300)."""


async def test_a_run_split_across_two_nodes_visits_every_url_once(tmp_path: Path) -> None:
    site = SiteOrigin(SPLIT_PAGES, delay=0.005)
    with pg_schema(migrated=False) as schema:
        url = schema_url(schema)
        async with site_origin(site) as origin_url, \
                warming(origin_url, tmp_path / "a", database_url=url, warm_workers=4) as a, \
                warming(origin_url, tmp_path / "b", database_url=url, warm_workers=4) as b:
            created = await a.service.warmer.start("manual", None, replace=False)
            run = await a.wait_run(created.run.id)
            stored = [await node.stoker.store.count() for node in (a, b)]
    assert run.phase == "done", run
    assert run.counts.warmed == run.counts.total == SPLIT_PAGES + 1
    seen = site.page_hits()
    assert set(seen) == {page(n) for n in range(1, SPLIT_PAGES + 1)}
    assert max(seen.values()) == 1, {path: n for path, n in seen.items() if n > 1}
    assert all(count > 0 for count in stored), stored  # both nodes took jobs
    assert sum(stored) == SPLIT_PAGES + 1  # each URL stored by the node that visited it


async def test_a_node_killed_mid_run_leaves_the_run_to_the_other(tmp_path: Path) -> None:
    """Node A (its own process) starts a run and is killed with SIGKILL halfway; node B,
    on the same database, takes the jobs A held once their leases lapse (B's clock runs
    past them) and finishes the run, each URL counted once."""
    site = SiteOrigin(PAGES, delay=0.02)
    with pg_schema(migrated=False) as schema:
        url = schema_url(schema)
        async with site_origin(site) as origin_url:
            run_id, settled = await killed_mid_run(origin_url, tmp_path / "a",
                                                   tmp_path / "a.log", database_url=url)
            clock = FakeClock(SystemClock().now() + PAST_LEASES, auto_advance=False)
            async with warming(origin_url, tmp_path / "b", clock=clock, database_url=url,
                               warm_workers=4) as b:
                run = await b.wait_run(run_id)
    assert settled < PAGES + 1, "the run ended before the kill: nothing was tested"
    assert run.phase == "done", run
    assert (run.counts.total, run.counts.settled) == (PAGES + 1,) * 2
    seen = site.page_hits()
    assert set(seen) == {page(n) for n in range(1, PAGES + 1)}
    assert max(seen.values()) <= 2  # a URL A was visiting when killed is visited again

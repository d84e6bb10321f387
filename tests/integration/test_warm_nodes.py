"""Two nodes on one database_url share a warm run: its jobs are claimed from the queue in
PostgreSQL, so every URL is visited once, by one node or the other."""

from __future__ import annotations

from pathlib import Path

from tests.integration.warm_site import SiteOrigin, page, site_origin, warming
from tests.job_backends import PG_URL, pg_schema

PAGES = 300


async def test_a_run_split_across_two_nodes_visits_every_url_once(tmp_path: Path) -> None:
    site = SiteOrigin(PAGES, delay=0.02)
    with pg_schema(migrated=False) as schema:
        url = f"{PG_URL}{'&' if '?' in PG_URL else '?'}search_path={schema}"
        async with site_origin(site) as origin_url, \
                warming(origin_url, tmp_path / "a", database_url=url, warm_workers=4) as a, \
                warming(origin_url, tmp_path / "b", database_url=url, warm_workers=4) as b:
            created = await a.service.warmer.start("manual", None, replace=False)
            run = await a.wait_run(created.run.id)
            stored = [await node.stoker.store.count() for node in (a, b)]
    assert run.phase == "done", run
    assert run.counts.warmed == run.counts.total == PAGES + 1
    seen = site.page_hits()
    assert set(seen) == {page(n) for n in range(1, PAGES + 1)}
    assert max(seen.values()) == 1, {path: n for path, n in seen.items() if n > 1}
    assert all(count > 0 for count in stored), stored  # both nodes took jobs
    assert sum(stored) == PAGES + 1  # each URL stored by the node that visited it

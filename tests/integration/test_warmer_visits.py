"""Warm visits against a real origin: stopgap pages are not stored and are revisited
after ``stopgap_delay`` (rewarmed, or given up after 2 revisits); warm visits carry no
cookies and stay out of the hit statistics, while visitors' hits put their pages first
in the next run."""

from __future__ import annotations

from pathlib import Path

from tests.integration.warm_site import (
    FOREVER,
    SiteOrigin,
    is_hit,
    page,
    site_origin,
    warming,
)

from stoker.purge.scope import PurgeScope


async def test_stopgap_pages_are_revisited_then_rewarmed_or_given_up(tmp_path: Path) -> None:
    site = SiteOrigin(10, stopgaps={page(3): 1, page(4): FOREVER})
    async with site_origin(site) as origin_url, \
            warming(origin_url, tmp_path / "data", stopgap_delay="0.2s") as warm:
        created = await warm.service.warmer.start("manual", None)
        run = await warm.wait_run(created.run.id)
        rewarmed = await warm.proxy.get(page(3))
    counts = run.counts
    assert run.phase == "done", run
    assert (counts.total, counts.warmed, counts.rewarmed, counts.gave_up) == (11, 9, 1, 1)
    assert counts.stopgap_pending == counts.failed == 0
    # a stopgap is never stored: each revisit reached the origin
    assert (site.hits[page(3)], site.hits[page(4)]) == (2, 3)
    assert is_hit(rewarmed) and rewarmed.text.endswith("/page/3</body></html>")


async def test_visitors_hits_lead_the_next_run_and_warm_visits_are_not_counted(
        tmp_path: Path) -> None:
    site = SiteOrigin(100)
    async with site_origin(site) as origin_url, \
            warming(origin_url, tmp_path / "data", warm_workers=1) as warm:
        first = await warm.service.warmer.start("manual", None)
        await warm.wait_run(first.run.id)
        counted_by_warming = await warm.service.flush_stats()
        visits = [await warm.proxy.get(page(50), headers={"cookie": "session=s3cret"})
                  for _ in range(20)]
        await warm.proxy.get(page(60))
        counted_by_visitors = await warm.service.flush_stats()
        site.forget()
        await warm.stoker.purger.purge(PurgeScope(everything=True))
        second = await warm.service.stores.runs.active()
        assert second is not None
        await warm.wait_run(second.id)
    assert counted_by_warming == 0
    assert all(is_hit(response) for response in visits)
    assert counted_by_visitors == 2
    assert site.order[:2] == [page(50), page(60)]
    assert len(site.order) == 100
    assert not any("cookie" in headers for headers in site.headers)

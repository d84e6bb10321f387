"""Issue 36 item 7: the demo stays hot.  An hour after the demo site was warmed, the page
a visitor keeps reading is a fresh hit (refresh ahead revalidated it before each expiry)
and every other page is still answered from the cache at once (its lifetime, then a day
of stale-while-revalidate).  On a fake clock: an hour in a few seconds."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import serving
from tests.integration.conftest import running_proxy

from stoker.adapters.visit import PipelineVisitor
from stoker.clock import FakeClock
from stoker.demo.origin import make_demo_app
from stoker.warm.refresh import Refresher
from stoker.warm.visits import VisitResult

PAGES = 12
TICK = 10.0
"""Fake seconds between two ticks of the refresher."""


async def test_an_hour_after_the_warm_every_demo_page_is_answered_from_the_cache(
        tmp_path: Path) -> None:
    clock = FakeClock()
    site = make_demo_app(pages=PAGES, delay=0.0, clock=clock)
    async with serving(site, kind="uvicorn") as origin_url, running_proxy(
            origin_url, tmp_path / "data", clock=clock) as proxy:
        reads = proxy.stoker.pipeline.reads
        assert reads is not None
        visits = PipelineVisitor(proxy.stoker.pipeline, clock, stopgap_header=b"x-stopgap")

        async def refresh(url: str, headers: tuple[tuple[bytes, bytes], ...]) -> VisitResult:
            return await visits.visit(url, headers, allowance=1, refresh=True)

        refresher = Refresher(reads, refresh, clock, user_agent=b"stoker-warmer/test")
        paths = ["/", *(f"/page/{n}" for n in range(1, PAGES + 1))]
        for path in paths:  # the start warm
            assert (await visits.visit(f"{proxy.url}{path}", (), allowance=1)).outcome == (
                "warmed")
        for second in range(0, 3600, int(TICK)):
            if second % 300 == 0:  # a visitor reads page 1 every five minutes
                read = await proxy.client.get("/page/1")
                assert "fwd=" not in read.headers["cache-status"], second
            clock.advance(TICK)
            await refresher.tick()
        hot = await proxy.client.get("/page/1")
        others = [await proxy.client.get(path) for path in paths if path != "/page/1"]
    assert "hit" in hot.headers["cache-status"] and "fwd=" not in hot.headers["cache-status"]
    assert all("hit" in page.headers["cache-status"] for page in others), [
        page.headers["cache-status"] for page in others]
    assert reads.refreshes["not_modified"] >= 5  # page 1, about every 570 s

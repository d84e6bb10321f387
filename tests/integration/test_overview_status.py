"""``GET /api/status``'s overview fields on a running Stoker with its warmer: what is cold
now (purged URLs waiting for their re-warm, the next warm due), this node's name, the
proxy's address, the windows of the charts, and the one hit ratio."""

from __future__ import annotations

from pathlib import Path

from tests.integration.warm_site import SITE, SiteOrigin, page, site_origin, warming

from stoker.purge.scope import PurgeScope


async def test_api_status_says_what_is_cold_and_when_the_next_warm_is_due(
        tmp_path: Path) -> None:
    site = SiteOrigin(20)
    async with site_origin(site) as origin_url, warming(
            origin_url, tmp_path / "data", node_id="edge-1", rewarm_delay="10m",
            rewarm_now_max=0) as warm:
        for n in range(1, 9):
            assert (await warm.proxy.get(page(n))).status_code == 200
        for n in range(1, 9):  # visitors read them from the cache now
            await warm.proxy.get(page(n))
        for n in range(1, 8):
            await warm.stoker.purger.purge(PurgeScope(tags=(f"page-{n}",)))
        await warm.service.warmer.rewarms.settle()
        status = (await warm.admin.get("/api/status")).json()
    cold = status["warm"]["cold"]
    assert cold["pending"] == 7
    assert cold["urls"] == [f"{SITE}{page(n)}" for n in range(1, 6)]  # the oldest five
    due = cold["next_warm"]
    assert due["name"] == "rewarm" and due["due_at"] > status["now"] + 200  # rewarm_max_wait
    assert status["expired"] == {"count": 0, "urls": []}  # read, and all still fresh
    assert status["node"] == "edge-1" and status["proxy_url"] == SITE
    assert [node["name"] for node in status["nodes"]] == ["edge-1"]
    assert status["hit_ratio"] == 0.5 == status["share"]["cache"]  # 8 hits of 16
    assert status["nodes"][0]["figures"]["hit_ratio"] == 0.5
    assert set(status["history"]) == {"5m", "1h", "1d"}
    assert status["history"]["1h"]["step"] == 60.0

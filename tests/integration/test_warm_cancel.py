"""Cancelling a warm run through the admin API: it ends ``cancelled`` with what it had
settled, its held visits do nothing more, a second cancel is 409, each call audited."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.integration.warm_site import SiteOrigin, site_origin, warming


async def test_a_running_warm_run_is_cancelled_once(tmp_path: Path) -> None:
    site = SiteOrigin(40)
    site.gate.clear()  # every page visit waits: the run cannot end by itself
    async with site_origin(site) as origin_url, warming(origin_url, tmp_path) as w:
        started = (await w.admin.post("/api/warm", json={})).json()["run"]["id"]
        while not site.order:  # a visit is at the origin
            await asyncio.sleep(0.02)
        cancelled = await w.admin.post(f"/api/warm/{started}/cancel")
        again = await w.admin.post(f"/api/warm/{started}/cancel")
        missing = await w.admin.post("/api/warm/999/cancel")
        site.gate.set()
        await asyncio.sleep(0.3)  # the held visits finish; the run stays cancelled
        run = await w.service.stores.runs.get(started)
        audit = (await w.admin.get("/api/audit", params={"action": "warm-cancel"})).json()
        schedule = (await w.admin.get("/api/schedule")).json()["deadlines"]
    assert cancelled.status_code == 200 and cancelled.json()["phase"] == "cancelled"
    assert again.status_code == 409 and "had ended (cancelled)" in again.json()["error"]
    assert missing.status_code == 404
    assert run is not None and run.phase == "cancelled"
    assert run.counts.settled < 41  # it did not go on warming
    assert [one["outcome"] for one in audit["records"]] == ["ended", "ok"]
    names = [one["name"] for one in schedule]
    assert {"rewarm", "refresh", "stats_flush"} <= set(names) and names == sorted(names)
    assert all(set(one) >= {"due_at", "completed_at", "last_error", "owner"} for one in schedule)

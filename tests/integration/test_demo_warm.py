"""``stoker demo`` end to end, in process on free ports: the demo site is warmed at
start with its progress announced, and "Edit this page" purges just that page's tag
so that, after the demo's short debounce, the warmer re-warms that page alone.

Waits are bounded polls of the admin API (no timing assertions); the origin's own
request counts show what reached it.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
from tests.integration.demo_harness import PAGES, Demo, demo, eventually

__all__ = ["demo"]  # the fixture


async def finished_run(admin: httpx.AsyncClient, reason: str) -> dict[str, Any] | None:
    recent = (await admin.get("/api/warm")).json()["recent"]
    return next((run for run in recent if run["reason"] == reason
                 and run["phase"] in ("done", "failed")), None)


async def test_demo_warms_at_start_and_an_edit_rewarms_just_that_page(demo: Demo) -> None:
    initial = await eventually(lambda: finished_run(demo.admin, "manual"), "the start warm")
    summary = await eventually(demo.announced("warmed "), "the summary line")
    before = await demo.proxy.get("/page/7")
    await demo.origin.post("/__stats/reset")

    edited = await demo.proxy.post("/page/7/edit")
    rewarm = await eventually(lambda: finished_run(demo.admin, "purge"), "the re-warm")
    after = await demo.proxy.get("/page/7")
    stats = (await demo.origin.get("/__stats")).json()

    assert initial["phase"] == "done" and initial["counts"]["failed"] == 0
    assert initial["counts"]["total"] > PAGES  # the pages, the home page, the collections
    assert re.fullmatch(rf"warmed {initial['counts']['total']} pages in [\d.]+ s: .* 0 failed.*",
                        summary[0])
    assert "warming: " in "\n".join(demo.lines)
    assert "hit" in before.headers["cache-status"] and "Revision 1." in before.text
    assert (edited.status_code, edited.headers["location"]) == (303, "/page/7/saved?purge=ok")
    assert rewarm["phase"] == "done"
    assert rewarm["counts"]["total"] == rewarm["counts"]["warmed"] == 1
    assert "hit" in after.headers["cache-status"] and "Revision 2." in after.text
    assert stats["paths"] == {"/page/7/edit": 1, "/page/7": 1}  # the warmer's one visit


async def test_demo_announces_the_dashboard_with_a_one_time_login_link(demo: Demo) -> None:
    line = (await eventually(demo.announced("dashboard: "), "the dashboard line"))[0]
    link = re.search(r"(http://\S+)/login\?once=(\S+?),", line)
    assert link is not None, line
    base, code = link.groups()
    async with httpx.AsyncClient(base_url=base) as browser:
        first = await browser.get("/login", params={"once": code})
        second = await browser.get("/login", params={"once": code})
        page = await browser.get("/", headers={"cookie": first.headers["set-cookie"].split(
            ";", 1)[0]})
    assert first.status_code == 303 and second.status_code == 401
    assert page.status_code == 200 and "Overview" in page.text

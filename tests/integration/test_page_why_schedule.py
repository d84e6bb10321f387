"""The Why-not-cached and Schedule pages on a running Stoker: behind the login, whole or
as the live region's content, showing what the API reports."""

from __future__ import annotations

from pathlib import Path

from tests.integration.admin_harness import CACHEABLE
from tests.integration.conftest import Origin
from tests.integration.dashboard_harness import dashboard
from tests.integration.warm_site import SiteOrigin, site_origin, warming

PART = {"x-stoker-part": "1"}


async def test_the_why_page_reports_what_was_left_out_and_how_to_fix_it(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/blog/a", headers=[("content-type", "text/html")], body=b"no lifetime")
    origin.app.set("/p", headers=CACHEABLE, body=b"cacheable")
    async with dashboard(origin.url, tmp_path / "d") as dash:
        for path in ("/blog/a", "/blog/a", "/p", "/p"):
            await dash.proxy.client.get(path)
        anonymous = await dash.client.get("/why")
        assert anonymous.status_code == 303 and anonymous.headers["location"] == "/login"
        page = await dash.client.get("/why", headers=await dash.session())
        assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
        assert '<a href="/why" aria-current="page">Why not cached</a>' in page.text
        api = (await dash.client.get("/api/why", headers=dash.bearer)).json()
        first = api["reasons"][0]
        assert f'id="reason-{first["reason"]}"' in page.text
        assert f"<strong>{api['not_cached']}</strong>" in page.text
        assert "/blog/a" in page.text and first["advice"][0]["text"].split("`")[0] in page.text
        part = await dash.client.get("/why", headers={**dash.bearer, **PART})
        assert "<html" not in part.text and "<div data-live>" in part.text
        one = await dash.client.get("/why", params={"url": f"{dash.proxy.client.base_url}/p"},
                                    headers=dash.bearer)
        assert 'class="tag ok">cached: 1 variant' in one.text
        wrong = await dash.client.get("/why", params={"url": "ftp://x/"}, headers=dash.bearer)
        assert wrong.status_code == 200 and 'class="flash bad"' in wrong.text


async def test_the_schedule_page_lists_every_deadline_the_api_does(tmp_path: Path) -> None:
    async with site_origin(SiteOrigin(pages=2)) as url, warming(url, tmp_path) as warm:
        api = (await warm.admin.get("/api/schedule")).json()["deadlines"]
        page = await warm.admin.get("/schedule")
        assert page.status_code == 200
        for deadline in api:
            assert f'<code class="detail">{deadline["name"]}</code>' in page.text
        assert {d["name"] for d in api} >= {"rewarm", "refresh", "stats_flush", "job_reap"}
        assert "Write the hit statistics to the store" in page.text
        part = await warm.admin.get("/schedule", headers=PART)
        assert part.text.count("<tr>") == len(api) + 1


async def test_without_a_warmer_the_schedule_page_says_how_to_get_one(
        origin: Origin, tmp_path: Path) -> None:
    async with dashboard(origin.url, tmp_path / "d") as dash:
        page = await dash.client.get("/schedule", headers=dash.bearer)
        assert page.status_code == 200 and "runs no warmer" in page.text

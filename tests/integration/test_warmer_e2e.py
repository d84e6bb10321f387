"""The warmer end to end, against a real origin with robots.txt, a sitemap index and gzip
child sitemaps: a whole-site run through the admin API fills every page once, the
API refuses a second full run and names unknown runs, and ``stoker warm --wait``
exits by the run's outcome, listing failed URLs."""

from __future__ import annotations

import re
from pathlib import Path

from tests.integration.warm_site import (
    SITE,
    SiteOrigin,
    not_hits,
    page,
    site_origin,
    warm_cli,
    warming,
)

PAGES = 2000


async def test_a_whole_site_run_fills_every_page_once(tmp_path: Path) -> None:
    site = SiteOrigin(PAGES)
    async with site_origin(site) as origin_url, \
            warming(origin_url, tmp_path / "data", warm_workers=8) as warm:
        started = await warm.admin.post("/api/warm", json={})
        assert started.status_code == 202, started.text
        run = await warm.wait_run(started.json()["run"]["id"])
        paths = ["/", *(page(n) for n in range(1, PAGES + 1))]
        missed = await not_hits(warm.proxy, paths)
    assert (run.phase, run.reason, run.scope) == ("done", "manual", "site")
    counts = run.counts
    assert (counts.total, counts.warmed, counts.failed) == (PAGES + 1, PAGES + 1, 0)
    assert missed == []
    assert site.page_hits() == {page(n): 1 for n in range(1, PAGES + 1)}
    assert [site.hits[f"/sitemaps/{i}.xml.gz"] for i in range(4)] == [1, 1, 1, 1]
    assert all("cookie" not in headers and headers["user-agent"].startswith("stoker-warmer/")
               for headers in site.headers)


async def test_the_api_refuses_a_second_full_run_unless_replace(tmp_path: Path) -> None:
    site = SiteOrigin(40, delay=0.05)
    async with site_origin(site) as origin_url, \
            warming(origin_url, tmp_path / "data", warm_workers=1) as warm:
        first = (await warm.admin.post("/api/warm", json={})).json()["run"]
        refused = await warm.admin.post("/api/warm", json={"replace": False})
        replaced = await warm.admin.post("/api/warm", json={"replace": True})
        unknown = await warm.admin.get("/api/warm/999999")
        second = replaced.json()["run"]
        await warm.wait_run(second["id"])
        superseded = await warm.admin.get(f"/api/warm/{first['id']}")
    assert refused.status_code == 409 and refused.json()["field"] == "replace"
    assert refused.json()["run"]["id"] == first["id"]
    assert replaced.status_code == 202 and replaced.json()["outcome"] == "superseded"
    assert second["id"] > first["id"]
    assert unknown.status_code == 404 and unknown.json()["field"] == "id"
    assert superseded.json()["phase"] == "cancelled"


async def test_stoker_warm_wait_exits_by_the_outcome(tmp_path: Path) -> None:
    site = SiteOrigin(30)
    async with site_origin(site) as origin_url, \
            warming(origin_url, tmp_path / "data") as warm:
        ok, ok_out = await warm_cli(warm.admin_url, "--wait")
        site.missing = {page(98)}  # outside the sitemap: never cached
        failed, failed_out = await warm_cli(warm.admin_url, "--wait", "--url",
                                            f"{SITE}{page(98)}", "--url", f"{SITE}{page(99)}")
    assert ok == 0, ok_out
    assert re.search(r"^warm run \d+ done: 31/31 settled, 31 warmed, 0 not stored, 0 failed",
                     ok_out, re.M)  # progress lines, though the output is no terminal
    assert failed == 1, failed_out
    assert f"failed: {SITE}{page(98)}" in failed_out
    assert f"failed: {SITE}{page(99)}" not in failed_out


async def test_stoker_warm_names_replace_while_a_run_is_going(tmp_path: Path) -> None:
    site = SiteOrigin(40, delay=0.05)
    async with site_origin(site) as origin_url, \
            warming(origin_url, tmp_path / "data", warm_workers=1) as warm:
        await warm.admin.post("/api/warm", json={})
        busy, busy_out = await warm_cli(warm.admin_url)
    assert busy == 1
    assert "is still going: replace it with stoker warm --replace" in busy_out


async def test_stoker_warm_url_takes_only_the_sites_urls(tmp_path: Path) -> None:
    async with site_origin(SiteOrigin(5)) as origin_url, \
            warming(origin_url, tmp_path / "data", site_aliases=["cms.internal:8000"]) as warm:
        foreign, foreign_out = await warm_cli(warm.admin_url, "--url", "https://elsewhere.example/a")
        alias = await warm.admin.post("/api/warm", json={
            "urls": [f"http://cms.internal:8000{page(3)}"]})
        run = await warm.wait_run(alias.json()["run"]["id"])
        hits = await not_hits(warm.proxy, [page(3)])
    assert foreign == 1
    assert "urls: https://elsewhere.example/a is not on this site (http://www.example.test)" in (
        " ".join(foreign_out.split()))
    assert alias.status_code == 202 and run.counts.warmed == 1
    assert hits == []  # the alias's URL warmed the site's page


async def test_a_manual_run_joins_the_run_warm_on_start_began(tmp_path: Path) -> None:
    site = SiteOrigin(40, delay=0.05)
    async with site_origin(site) as origin_url, \
            warming(origin_url, tmp_path / "data", warm_workers=1,
                    warm_on_start="empty") as warm:
        (automatic,) = await warm.service.stores.runs.recent()
        joined = await warm.admin.post("/api/warm", json={})
        waited, waited_out = await warm_cli(warm.admin_url, "--wait")
        manual = await warm.admin.post("/api/warm", json={})
        refused = await warm.admin.post("/api/warm", json={})
    assert automatic.reason == "deploy"
    assert joined.status_code == 202 and joined.json()["outcome"] == "joined"
    assert joined.json()["run"]["id"] == automatic.id
    assert waited == 0, waited_out  # `stoker warm --wait` right after a first start
    assert f"warm run {automatic.id} (deploy, site): joined" in waited_out
    assert manual.json()["outcome"] == "started"
    assert refused.status_code == 409  # a manual run is not joined: it is refused

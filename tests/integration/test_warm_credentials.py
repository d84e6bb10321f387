"""Warm credentials end to end: set through the admin API (write-only: only fingerprints
come back, in the answers and the audit log), sent by the warmer's visits and sitemap
fetches, never on a visitor's request, kept across a restart."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from tests.integration.warm_site import SiteOrigin, site_origin, warming

from stoker.warm.credentials import fingerprint

NAMES = ["header:x-bypass-maintenance", "cookie:age_ok"]
SECRET = "open-sesame-5f2a"
PAGES = 5


async def test_credentials_reach_the_origin_on_warm_requests_only_and_are_never_shown(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    site = SiteOrigin(PAGES)
    async with site_origin(site) as origin_url:
        async with warming(origin_url, tmp_path, warm_credentials=NAMES) as w:
            before = (await w.admin.get("/api/warm/credentials")).json()
            put = await w.admin.put("/api/warm/credentials/header:x-bypass-maintenance",
                                    json={"value": SECRET})
            cookie = await w.admin.put("/api/warm/credentials/cookie:age_ok",
                                       json={"value": "1"})
            unknown = await w.admin.put("/api/warm/credentials/header:x-other",
                                        json={"value": "x"})
            bad = await w.admin.put("/api/warm/credentials/header:x-bypass-maintenance",
                                    json={"value": "a\r\nx-evil: 1"})
            started = await w.admin.post("/api/warm", json={})
            run = await w.wait_run(started.json()["run"]["id"])
            warm_heads = list(site.headers)
            sitemap_head = site.other_heads["/sitemap_index.xml"]
            site.forget()
            visitor = await w.proxy.get("/page/9001")  # not warmed: a miss to the origin
            listed = (await w.admin.get("/api/warm/credentials")).json()
            audit = (await w.admin.get("/api/audit")).json()["records"]
        async with warming(origin_url, tmp_path, warm_credentials=NAMES) as again:
            kept = (await again.admin.get("/api/warm/credentials")).json()
            removed = await again.admin.delete("/api/warm/credentials/cookie:age_ok")
            after = (await again.admin.get("/api/warm/credentials")).json()
    assert [one["set"] for one in before["credentials"]] == [False, False]
    assert put.status_code == 200 and put.json()["fingerprint"] == fingerprint(SECRET)
    assert cookie.status_code == 200
    assert unknown.status_code == 404 and "warm_credentials" in unknown.json()["error"]
    assert bad.status_code == 400 and bad.json()["field"] == "value"
    assert run.phase == "done" and warm_heads, run
    assert all(head.get("x-bypass-maintenance") == SECRET and "age_ok=1" in head["cookie"]
               for head in warm_heads), warm_heads
    assert sitemap_head.get("x-bypass-maintenance") == SECRET  # discovery carries them too
    assert visitor.status_code == 200
    assert site.headers and all("x-bypass-maintenance" not in head and "cookie" not in head
                                for head in site.headers)
    assert listed == {"credentials": [
        {"name": "header:x-bypass-maintenance", "set": True,
         "fingerprint": fingerprint(SECRET), "set_at": listed["credentials"][0]["set_at"]},
        {"name": "cookie:age_ok", "set": True, "fingerprint": fingerprint("1"),
         "set_at": listed["credentials"][1]["set_at"]}]}
    changes = [one for one in audit if one["action"] == "warm-credential"]
    assert [(one["outcome"], one["target"]["name"]) for one in changes][-1::-1][:4] == [
        ("ok", "header:x-bypass-maintenance"), ("ok", "cookie:age_ok"),
        ("invalid", "header:x-other"), ("invalid", "header:x-bypass-maintenance")]
    assert changes[-1]["target"]["fingerprint"] == fingerprint(SECRET)
    assert SECRET not in repr(audit) and SECRET not in repr(listed)
    assert SECRET not in caplog.text
    assert [one["set"] for one in kept["credentials"]] == [True, True]  # a restart keeps them
    assert removed.json() == {"name": "cookie:age_ok", "removed": True}
    assert [one["set"] for one in after["credentials"]] == [True, False]

"""Warm counts say what happened, against a real origin: a cacheable page is ``warmed``, a
page that always sets a cookie is ``not_stored`` (reason ``set-cookie``: Stoker does not
store it by default, so visitors miss it too), and a page whose origin answers 500 while
a stale copy exists is ``failed`` (Stoker served the stale copy; nothing was refreshed) —
in the run, the admin API, the log summary and ``stoker warm --wait``."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from tests.integration.conftest import Origin
from tests.integration.warm_site import SITE, is_hit, warm_cli, warming

from stoker.warm.run import Counts

URLS = [f"{SITE}/ok", f"{SITE}/cookie", f"{SITE}/broken"]
CACHEABLE = ("cache-control", "public, max-age=3600")


async def test_warm_counts_separate_warmed_not_stored_and_failed(
        origin: Origin, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    app = origin.app
    app.set("/ok", headers=[CACHEABLE], body=b"ok")
    app.set("/cookie", headers=[CACHEABLE, ("set-cookie", "session=abc; Path=/")], body=b"c")
    app.set("/broken", headers=[("cache-control", "public, max-age=1, stale-if-error=3600")],
            body=b"old copy")
    with caplog.at_level(logging.INFO, "stoker.warm"):
        async with warming(origin.url, tmp_path / "data") as warm:
            first = await warm.proxy.get("/broken")
            assert first.status_code == 200 and "stored" in first.headers["cache-status"]
            await asyncio.sleep(1.2)  # the copy goes stale; stale-if-error keeps it usable
            app.set("/broken", status=500, body=b"origin error")
            started = await warm.admin.post("/api/warm", json={"urls": URLS})
            assert started.status_code == 202, started.text
            run = await warm.wait_run(started.json()["run"]["id"])
            shown = (await warm.admin.get(f"/api/warm/{run.id}")).json()
            mapped = (await warm.admin.get(f"/api/warm/{run.id}/map")).json()
            one = (await warm.admin.get(f"/api/warm/{run.id}/map", params={"limit": 1})).json()
            no_run = await warm.admin.get("/api/warm/999/map")
            cookie_page = await warm.proxy.get("/cookie")
            code, out = await warm_cli(warm.admin_url, "--wait", *(
                arg for url in URLS for arg in ("--url", url)))
    assert run.phase == "done", run
    assert run.counts == Counts(total=3, warmed=1, not_stored=1, failed=1)
    assert shown["counts"]["not_stored"] == 1 and shown["counts"]["settled"] == 3
    assert shown["not_stored_reasons"] == {"set-cookie": 1}
    assert shown["failed_urls"] == [f"{SITE}/broken"]
    assert mapped["states"] == {"warmed": [f"{SITE}/ok"], "not_stored": [f"{SITE}/cookie"],
                                "failed": [f"{SITE}/broken"]} and not mapped["truncated"]
    assert one["states"] == mapped["states"] and no_run.status_code == 404
    assert "3 URLs, 1 warmed, 0 not modified, 1 not stored (set-cookie: 1), 1 failed" \
        in caplog.text
    # not stored indeed: the visitor after the run missed, and the origin was asked again
    assert not is_hit(cookie_page) and app.count("/cookie") == 3
    assert app.count("/broken") == 3  # the visitor, then each run's visit got the 500
    assert code == 1, out  # a failed URL
    assert "not_stored" in out and "1 not stored (set-cookie: 1)" in out
    assert f"failed: {SITE}/broken" in out

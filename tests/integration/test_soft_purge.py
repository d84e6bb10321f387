"""A soft purge keeps serving what may be served stale, and only that."""

from __future__ import annotations

from pathlib import Path

from tests.integration.admin_harness import eventually, purging
from tests.integration.conftest import Origin


async def test_soft_purge_serves_stale_while_refreshing_once(origin: Origin,
                                                             tmp_path: Path) -> None:
    origin.app.set("/page", headers=[("cache-control", "max-age=600"), ("etag", '"v1"')],
                   body=b"old", not_modified_etag='"v1"')
    async with purging(origin.url, tmp_path) as (proxy, admin):
        await proxy.client.get("/page")
        assert (await admin.purge(urls=[f"{proxy.url}/page"], soft=True)).status_code == 200
        stale = await proxy.client.get("/page")
        await eventually(lambda: origin.app.count("/page") == 2, "one background refresh")
        await proxy.stoker.pipeline.drain()
        fresh = [await proxy.client.get("/page") for _ in range(3)]
    assert stale.text == "old"
    assert "detail=stale-while-revalidate" in stale.headers["cache-status"]
    assert all(r.text == "old" and "detail" not in r.headers["cache-status"] for r in fresh)
    assert origin.app.count("/page") == 2  # the first fetch and one refresh, never per visitor


async def test_soft_purge_never_serves_a_must_revalidate_page_stale(origin: Origin,
                                                                    tmp_path: Path) -> None:
    origin.app.set("/strict", headers=[("cache-control", "max-age=600, must-revalidate")],
                   body=b"v1")
    async with purging(origin.url, tmp_path) as (proxy, admin):
        await proxy.client.get("/strict")
        await admin.purge(urls=[f"{proxy.url}/strict"], soft=True)
        origin.app.set("/strict", headers=[("cache-control", "max-age=600, must-revalidate")],
                       body=b"v2")
        after = await proxy.client.get("/strict")
    assert after.text == "v2"
    assert "hit" not in after.headers["cache-status"].split("; ")

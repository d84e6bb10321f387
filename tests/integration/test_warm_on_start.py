"""``warm_on_start``: a new site is not cold until someone runs ``stoker warm``.

With the default (``empty``) ``stoker serve`` on an empty cache starts a full warm run
by itself; ``always`` starts one at every start, ``never`` none; none ever replaces a
run already going.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx
import pytest
from tests.integration.warm_site import (
    DEADLINE,
    TOKEN,
    SiteOrigin,
    not_hits,
    page,
    site_origin,
    start_serve,
    warming,
)

from stoker.app.warm_service import warms_on_start

PAGES = 20


@pytest.mark.parametrize(("mode", "cached", "warms"), [
    ("empty", 0, True), ("empty", 1, False), ("always", 0, True), ("always", 5, True),
    ("never", 0, False), ("never", 5, False),
])
def test_warms_on_start(mode: str, cached: int, warms: bool) -> None:
    assert warms_on_start(mode, cached) is warms


async def test_an_empty_cache_is_warmed_at_start_and_a_full_one_is_not(tmp_path: Path) -> None:
    site = SiteOrigin(PAGES)
    async with site_origin(site) as origin_url:
        async with warming(origin_url, tmp_path / "data", warm_on_start="empty") as warm:
            runs = await warm.service.stores.runs.recent()
            assert [run.reason for run in runs] == ["deploy"]
            run = await warm.wait_run(runs[0].id)
            assert run.phase == "done" and run.counts.warmed == PAGES + 1
            assert await not_hits(warm.proxy, [page(n) for n in range(1, PAGES + 1)]) == []
        async with warming(origin_url, tmp_path / "data", warm_on_start="empty") as warm:
            assert len(await warm.service.stores.runs.recent()) == 1  # cached: no new run
        async with warming(origin_url, tmp_path / "data", warm_on_start="always") as warm:
            assert len(await warm.service.stores.runs.recent()) == 2


async def test_never_starts_nothing(tmp_path: Path) -> None:
    async with site_origin(SiteOrigin(PAGES)) as origin_url, \
            warming(origin_url, tmp_path / "data", warm_on_start="never") as warm:
        assert await warm.service.stores.runs.recent() == []


async def test_stoker_serve_on_a_new_data_dir_warms_the_site(tmp_path: Path) -> None:
    site = SiteOrigin(PAGES)
    async with site_origin(site) as origin_url:
        with (tmp_path / "serve.log").open("wb") as log:
            settings = {"warm_on_start": "empty", "warm_workers": 2}
            proc, admin_url = await start_serve(origin_url, tmp_path / "data", log, **settings)
            try:
                async with httpx.AsyncClient(base_url=admin_url, timeout=30, headers={
                        "authorization": f"Bearer {TOKEN}"}) as admin:
                    run = await asyncio.wait_for(_ended_run(admin), DEADLINE)
            finally:
                proc.send_signal(signal.SIGTERM)
                await proc.wait()
    assert (run["reason"], run["phase"], run["counts"]["warmed"]) == ("deploy", "done",
                                                                       PAGES + 1)
    assert set(site.page_hits()) == {page(n) for n in range(1, PAGES + 1)}


async def _ended_run(admin: httpx.AsyncClient) -> dict[str, object]:
    while True:
        runs = (await admin.get("/api/warm")).json()["recent"]
        if runs and runs[0]["phase"] not in ("collect", "warm"):
            return runs[0]  # type: ignore[no-any-return]
        await asyncio.sleep(0.05)

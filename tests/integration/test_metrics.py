"""``/metrics``, ``/healthz`` and ``/readyz`` of a real Stoker on real servers."""

from __future__ import annotations

from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families
from tests.integration.admin_harness import CACHEABLE, purging
from tests.integration.conftest import Origin
from tests.integration.warm_site import SiteOrigin, page, site_origin, warming


def values(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == name}


async def test_metrics_count_what_the_cache_did_and_the_origin_took(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/t", headers=CACHEABLE, body=b"t")
    origin.app.set("/private", headers=[("cache-control", "private")], body=b"p")
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        for _ in range(4):
            await proxy.client.get("/t")
        await proxy.client.get("/private")
        await proxy.client.get("/t", headers={"cookie": "session=1"})
        await proxy.client.post("/t", content=b"x")
        scraped = await admin.client.get("/metrics")
        async with httpx.AsyncClient(base_url=admin.url) as anonymous:
            refused = await anonymous.get("/metrics")
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert scraped.headers["cache-control"] == "no-store"
    assert refused.status_code == 401  # the figures need the token, as the API does
    requests = values(scraped.text, "stoker_requests_total")
    visitor = {(dict(labels)["outcome"], dict(labels)["reason"]): count
               for labels, count in requests.items() if dict(labels)["source"] == "visitor"}
    assert visitor[("hit", "")] == 4  # the cookie's too: the page is public
    assert visitor[("miss", "")] == 1
    assert sum(count for (kind, _), count in visitor.items() if kind == "pass") == 1
    assert sum(count for (kind, _), count in visitor.items() if kind == "bypass") == 1
    latency = values(scraped.text, "stoker_origin_response_seconds_count")
    assert latency[()] == 3  # the miss, the private page, the POST
    assert values(scraped.text, "stoker_cache_entries")[(("tier", "l1"),)] == 0  # POSTed
    assert values(scraped.text, "stoker_origin_up")[()] == 1


async def test_probes_are_open_and_ready_while_the_stores_answer(
        origin: Origin, tmp_path: Path) -> None:
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        async with httpx.AsyncClient(base_url=admin.url) as anonymous:
            alive = await anonymous.get("/healthz")
            ready = await anonymous.get("/readyz")
        await proxy.stoker.l2.close()  # its store gone: not ready, still alive
        async with httpx.AsyncClient(base_url=admin.url) as anonymous:
            unready = await anonymous.get("/readyz")
            still_alive = await anonymous.get("/healthz")
    assert (alive.status_code, ready.status_code) == (200, 200)
    assert ready.json() == {"ready": True, "checks": {"l2": "ok", "audit": "ok",
                                                     "version": "ok", "data_dir": "ok"}}
    assert unready.status_code == 503 and still_alive.status_code == 200
    assert unready.json()["checks"]["l2"].startswith("RuntimeError")


async def test_with_a_warmer_readiness_and_metrics_cover_its_queue_and_ticker(
        tmp_path: Path) -> None:
    site = SiteOrigin(pages=3)
    async with site_origin(site) as url, warming(url, tmp_path / "d") as warm:
        await warm.proxy.get(page(0))
        ready = await warm.admin.get("/readyz")
        scraped = await warm.admin.get("/metrics")
    assert ready.status_code == 200
    assert set(ready.json()["checks"]) == {"l2", "audit", "version", "data_dir", "queue",
                                          "ticker"}
    assert "stoker_jobs" in scraped.text and "stoker_deadline_lag_seconds" in scraped.text

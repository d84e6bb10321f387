"""Hit and miss, a malformed request and a restart on real servers (the behaviours
one at a time, in process: ``tests/core/test_basics.py``)."""

from __future__ import annotations

from pathlib import Path

import httpx
from tests.conftest import free_port
from tests.integration.conftest import Origin, Proxy, running_proxy

CACHEABLE = [("cache-control", "public, max-age=60"), ("etag", '"v1"')]


async def test_miss_then_hit_with_age_and_cache_status(origin: Origin, proxy: Proxy) -> None:
    origin.app.set("/a", headers=CACHEABLE, body=b"page a")
    first = await proxy.client.get("/a")
    second = await proxy.client.get("/a")
    assert first.text == second.text == "page a"
    assert first.headers["cache-status"].startswith("stoker; fwd=uri-miss; fwd-status=200; stored")
    assert second.headers["cache-status"].startswith("stoker; hit; ttl=")
    assert 0 <= int(second.headers["age"]) <= 2  # real clock: a slow machine may tick
    assert origin.app.count("/a") == 1


async def test_restart_keeps_l2_entries(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/keep", headers=CACHEABLE, body=b"persisted")
    port = free_port()  # the Host header, and so the key, names the port
    async with running_proxy(origin.url, tmp_path / "data", port=port) as proxy:
        await proxy.client.get("/keep")
    async with running_proxy(origin.url, tmp_path / "data", port=port) as proxy:
        again = await proxy.client.get("/keep")
    assert again.text == "persisted"
    assert "hit" in again.headers["cache-status"]
    assert origin.app.count("/keep") == 1


async def test_malformed_request_gets_400_not_a_crash(origin: Origin, proxy: Proxy) -> None:
    try:
        bad = await proxy.client.get("/x", headers={"host": "bad host/name"})
    except httpx.RemoteProtocolError:  # HTTP/2: granian resets the stream itself
        assert proxy.protocol == "h2c"
    else:
        assert bad.status_code == 400
        assert bad.headers["cache-control"] == "no-store"
    ok = await proxy.client.get("/x")
    assert ok.status_code == 404  # the proxy still serves

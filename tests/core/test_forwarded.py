"""Vary on the request as forwarded, variants per URL, Via and Cache-Status on every
response, the scheme a trusted proxy reports: in process (on real servers:
``tests/integration/test_proxy_forwarded.py``)."""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import httpx
from tests.core.conftest import core_proxy
from tests.integration.conftest import Origin, Proxy

from stoker.config.rules import Rule

Message = MutableMapping[str, Any]
VARY_COOKIE = [("cache-control", "max-age=60"), ("vary", "Cookie")]


def hit(response: httpx.Response) -> bool:
    return "; hit" in response.headers["cache-status"]


async def test_stripped_and_ignored_cookies_do_not_split_variants(origin: Origin,
                                                                  tmp_path: Path) -> None:
    rules = (Rule(path="/v", strip_cookies=("_ga*",), vary_ignore_cookies=("csrftoken",)),)
    origin.app.set("/v/1", headers=VARY_COOKIE, body=b"one")
    async with core_proxy(origin.app, tmp_path, rules=rules) as proxy:
        await proxy.client.get("/v/1", headers={"cookie": "_ga=GA1.1"})
        second = await proxy.client.get("/v/1", headers={"cookie": "_ga=GA1.2"})
        third = await proxy.client.get("/v/1", headers={"cookie": "csrftoken=B; _gid=1"})
        fourth = await proxy.client.get("/v/1", headers={"cookie": "csrftoken=C; _gid=1"})
        anonymous = await proxy.client.get("/v/1")
        personal = await proxy.client.get("/v/1", headers={"cookie": "sessionid=zz"})
    assert hit(second) and hit(anonymous)
    assert not hit(third) and hit(fourth)  # _gid is neither stripped nor ignored
    assert not hit(personal)
    assert origin.app.count("/v/1") == 3
    # csrftoken reached the origin: ignored for Vary only, never stripped
    assert any("csrftoken=B" in headers.get("cookie", "")
               for _, _, headers in origin.app.requests)


async def test_variants_per_url_are_bounded(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/many", headers=[("cache-control", "max-age=60"), ("vary", "x-visitor")])
    async with core_proxy(origin.app, tmp_path, max_variants=3) as proxy:
        for visitor in ("a", "b", "c"):
            await proxy.client.get("/many", headers={"x-visitor": visitor})
        await proxy.client.get("/many", headers={"x-visitor": "a"})  # a is now most recent
        await proxy.client.get("/many", headers={"x-visitor": "d"})  # drops b, the LRU
        stored = await proxy.stoker.store.get(proxy.stoker.pipeline.keying.key_for_url(
            f"{proxy.url}/many"))
        again_a = await proxy.client.get("/many", headers={"x-visitor": "a"})
        again_b = await proxy.client.get("/many", headers={"x-visitor": "b"})
    assert sorted(entry.variant for entry in stored) == [
        'x-visitor="a"', 'x-visitor="c"', 'x-visitor="d"']
    assert hit(again_a) and not hit(again_b)


async def test_own_answers_carry_via_and_cache_status(origin: Origin, tmp_path: Path) -> None:
    async with core_proxy(origin.app, tmp_path) as proxy:
        purge = await proxy.client.request("PURGE", "/x")
        bad_host = await proxy.client.get("/x", headers={"host": "bad host!"})
        origin.app.set("/pass", headers=[("cache-control", "no-store")])
        passed = await proxy.client.get("/pass")
    for response in (purge, bad_host, passed):
        assert response.headers["via"] == "1.1 stoker", response.status_code
        assert response.headers["cache-status"].startswith("stoker"), response.status_code
    assert purge.status_code == 405 and bad_host.status_code == 400


async def test_origin_hears_the_scheme_a_trusted_proxy_reports(origin: Origin,
                                                               proxy: Proxy) -> None:
    origin.app.set("/s", headers=[("cache-control", "max-age=60")])
    await proxy.client.get("/s", headers={"x-forwarded-proto": "https",
                                          "x-forwarded-for": "198.51.100.4"})
    _, _, headers = origin.app.requests[-1]
    assert headers["x-forwarded-proto"] == "https"
    assert headers["x-forwarded-for"] == "198.51.100.4, 127.0.0.1"

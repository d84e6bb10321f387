"""Hit, miss, conditional requests, HEAD, Vary, unsafe methods, malformed requests: the
core in process (``tests/integration/test_proxy_basics.py``: on real servers)."""

from __future__ import annotations

import httpx
from tests.integration.conftest import Origin, Proxy

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


async def test_origin_receives_forwarding_headers(origin: Origin, proxy: Proxy) -> None:
    origin.app.set("/fw", headers=CACHEABLE)
    await proxy.client.get("/fw", headers={"host": "shop.example", "if-none-match": '"zzz"'})
    _, _, headers = origin.app.requests[-1]
    assert headers["host"] == "shop.example"
    assert headers["x-forwarded-for"] == "127.0.0.1"
    assert headers["x-forwarded-host"] == "shop.example"
    assert headers["x-forwarded-proto"] == "http"
    assert headers["via"].endswith("1.1 stoker")
    assert "if-none-match" not in headers  # the cache fetches whole representations


async def test_client_conditional_answered_from_cache(origin: Origin, proxy: Proxy) -> None:
    origin.app.set("/c", headers=CACHEABLE, body=b"x" * 100)
    await proxy.client.get("/c")
    hit = await proxy.client.get("/c", headers={"if-none-match": '"v1"'})
    assert hit.status_code == 304
    assert hit.content == b""
    assert hit.headers["etag"] == '"v1"'
    other = await proxy.client.get("/c", headers={"if-none-match": '"v0"'})
    assert other.status_code == 200
    assert origin.app.count("/c") == 1


async def test_head_served_from_cached_get(origin: Origin, proxy: Proxy) -> None:
    origin.app.set("/h", headers=CACHEABLE, body=b"body of h")
    head_miss = await proxy.client.head("/h")
    head_hit = await proxy.client.head("/h")
    get_hit = await proxy.client.get("/h")
    assert head_miss.content == b"" and head_hit.content == b""
    assert head_hit.headers["content-length"] == str(len(b"body of h"))
    assert "hit" in head_hit.headers["cache-status"]
    assert get_hit.content == b"body of h"
    assert [m for m, p, _ in origin.app.requests if p == "/h"] == ["GET"]


async def test_vary_keeps_one_variant_per_header_value(origin: Origin, proxy: Proxy) -> None:
    origin.app.set("/v", headers=[*CACHEABLE, ("vary", "Accept-Language")], body=b"v")
    en = await proxy.client.get("/v", headers={"accept-language": "en"})
    de = await proxy.client.get("/v", headers={"accept-language": "de"})
    en_again = await proxy.client.get("/v", headers={"accept-language": "en"})
    assert "fwd=uri-miss" in en.headers["cache-status"]
    assert "fwd=vary-miss" in de.headers["cache-status"]
    assert "hit" in en_again.headers["cache-status"]
    assert origin.app.count("/v") == 2


async def test_no_freshness_no_validator_is_not_stored(origin: Origin, proxy: Proxy) -> None:
    origin.app.set("/plain", body=b"plain")
    await proxy.client.get("/plain")
    await proxy.client.get("/plain")
    assert origin.app.count("/plain") == 2


async def test_unsafe_method_invalidates_the_url(origin: Origin, proxy: Proxy) -> None:
    origin.app.set("/post", headers=CACHEABLE, body=b"old")
    await proxy.client.get("/post")
    posted = await proxy.client.post("/post", content=b"edit")
    assert "fwd=method" in posted.headers["cache-status"]
    origin.app.set("/post", headers=CACHEABLE, body=b"new")
    after = await proxy.client.get("/post")
    assert after.text == "new"
    assert origin.app.requests[-2][0] == "POST"


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


async def test_an_inline_miss_is_in_l1_before_its_response_ends(origin: Origin,
                                                                 proxy: Proxy) -> None:
    """So the same client's next request is a hit, however fast it comes."""
    origin.app.set("/next", headers=CACHEABLE, body=b"n" * 3000)
    await proxy.client.get("/next")
    key = proxy.stoker.pipeline.keying.key_for_url(f"{proxy.url}/next")
    assert proxy.stoker.store.get_l1(key)  # no wait: stored before the last byte was sent
    again = await proxy.client.get("/next")
    assert "; hit" in again.headers["cache-status"]

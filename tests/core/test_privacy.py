"""No private response is ever served to another client: the core in process (on real
servers: ``tests/integration/test_proxy_privacy.py``)."""

from __future__ import annotations

from pathlib import Path

from tests.core.conftest import core_proxy
from tests.integration.conftest import Origin, Proxy

from stoker.config.rules import parse_rules


async def test_private_response_is_never_served_to_a_second_client(origin: Origin,
                                                                   proxy: Proxy) -> None:
    origin.app.set("/me", headers=[("cache-control", "private, max-age=600")], body=b"alice")
    first = await proxy.client.get("/me", headers={"cookie": "user=alice"})
    origin.app.set("/me", headers=[("cache-control", "private, max-age=600")], body=b"bob")
    second = await proxy.client.get("/me", headers={"cookie": "user=bob"})
    assert first.text == "alice" and second.text == "bob"
    assert "detail=private" in second.headers["cache-status"]
    assert origin.app.count("/me") == 2


async def test_set_cookie_response_is_not_stored(origin: Origin, proxy: Proxy) -> None:
    origin.app.set("/login", headers=[("cache-control", "max-age=600"),
                                      ("set-cookie", "session=secret1")], body=b"one")
    first = await proxy.client.get("/login")
    origin.app.set("/login", headers=[("cache-control", "max-age=600"),
                                      ("set-cookie", "session=secret2")], body=b"two")
    second = await proxy.client.get("/login")
    assert first.headers["set-cookie"] == "session=secret1"
    assert second.headers["set-cookie"] == "session=secret2"
    assert "detail=set-cookie" in second.headers["cache-status"]


async def test_rule_may_strip_set_cookie_and_store(origin: Origin, tmp_path: Path) -> None:
    rules = parse_rules([{"path": "/shop", "strip_set_cookie": True}])
    origin.app.set("/shop", headers=[("cache-control", "max-age=600"),
                                     ("set-cookie", "tracking=1")], body=b"shop")
    async with core_proxy(origin.app, tmp_path / "d", rules=rules) as proxy:
        first = await proxy.client.get("/shop")
        second = await proxy.client.get("/shop")
    assert "set-cookie" not in first.headers and "set-cookie" not in second.headers
    assert "hit" in second.headers["cache-status"]
    assert origin.app.count("/shop") == 1


async def test_authorization_requests_share_only_what_the_origin_allows(
        origin: Origin, proxy: Proxy) -> None:
    """RFC 9111 §3.5: public / s-maxage / must-revalidate make it shareable."""
    origin.app.set("/doc", headers=[("cache-control", "max-age=600")], body=b"doc")
    origin.app.set("/pub", headers=[("cache-control", "public, max-age=600")], body=b"pub")
    auth = {"authorization": "Bearer x"}
    await proxy.client.get("/doc")
    doc_with_auth = await proxy.client.get("/doc", headers=auth)
    await proxy.client.get("/pub")
    pub_with_auth = await proxy.client.get("/pub", headers=auth)
    assert "hit" not in doc_with_auth.headers["cache-status"]
    assert origin.app.count("/doc") == 2
    assert "hit" in pub_with_auth.headers["cache-status"]
    assert origin.app.count("/pub") == 1


async def test_authorized_response_is_stored_only_when_shareable(origin: Origin,
                                                                 proxy: Proxy) -> None:
    auth = {"authorization": "Bearer x"}
    origin.app.set("/mine", headers=[("cache-control", "max-age=600")], body=b"mine")
    origin.app.set("/api", headers=[("cache-control", "s-maxage=600")], body=b"api")
    mine = await proxy.client.get("/mine", headers=auth)
    anonymous_mine = await proxy.client.get("/mine")
    await proxy.client.get("/api", headers=auth)
    anonymous_api = await proxy.client.get("/api")
    assert "detail=authorization" in mine.headers["cache-status"]
    assert "hit" not in anonymous_mine.headers["cache-status"]
    assert "hit" in anonymous_api.headers["cache-status"]


async def test_bypass_cookie_goes_to_origin_and_is_never_stored(origin: Origin,
                                                                tmp_path: Path) -> None:
    rules = parse_rules([{"bypass_cookies": ["wordpress_logged_in_*"]}])
    origin.app.set("/post", headers=[("cache-control", "max-age=600")], body=b"public view")
    async with core_proxy(origin.app, tmp_path / "d", rules=rules) as proxy:
        origin.app.set("/post", headers=[("cache-control", "max-age=600")], body=b"admin view")
        logged_in = await proxy.client.get(
            "/post", headers={"cookie": "wordpress_logged_in_abc=1; other=2"})
        origin.app.set("/post", headers=[("cache-control", "max-age=600")], body=b"public view")
        anonymous = await proxy.client.get("/post")
    assert logged_in.text == "admin view"
    assert "fwd=bypass" in logged_in.headers["cache-status"]
    assert anonymous.text == "public view"
    assert "fwd=uri-miss" in anonymous.headers["cache-status"]


async def test_rules_ttl_ignore_query_and_strip_cookies(origin: Origin, tmp_path: Path) -> None:
    rules = parse_rules([{"path": "/blog/", "ttl": "5m", "swr": "1m",
                          "ignore_query": ["utm_*", "fbclid"], "strip_cookies": ["_ga*"],
                          "ignore_cookies": ["consent"]}])
    origin.app.set("/blog/a", body=b"silent origin")  # no Cache-Control at all
    async with core_proxy(origin.app, tmp_path / "d", rules=rules) as proxy:
        first = await proxy.client.get("/blog/a?utm_source=x&fbclid=1",
                                       headers={"cookie": "_ga=1; consent=yes"})
        second = await proxy.client.get("/blog/a")
    ttl = int(first.headers["cache-status"].rsplit("ttl=", 1)[1])
    assert "stored" in first.headers["cache-status"] and 290 <= ttl <= 300
    assert "hit" in second.headers["cache-status"]
    assert origin.app.count("/blog/a") == 1
    _, _, headers = origin.app.requests[0]
    assert headers["cookie"] == "consent=yes"  # stripped cookies never reach the origin

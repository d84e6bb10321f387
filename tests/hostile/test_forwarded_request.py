"""Variant selection, storage and the key use exactly the request as it is forwarded.

Stoker used to strip the headers a client's ``Connection`` names before forwarding, yet
select and store the Vary variant by them (``Accept-Language: fr`` + ``Connection:
accept-language`` stored the page made for no language as the French one); to leave
``ignore_query`` parameters out of the key yet forward them (with ``preset =
"wordpress"``, ``?utm_source=<script>`` was stored as the clean URL's page); and to key
``Host: a.test:80`` as ``a.test`` yet forward it with the port.

And it forwarded Stoker's own admin session cookie (a browser sends the admin listener's
cookie to every port of the host), so the origin, or its logs, could replay it against
the admin API; and a client's ``Forwarded: host=evil.example``, ``X-Original-URL``,
``X-HTTP-Method-Override`` as written, contradicting the ``X-Forwarded-*`` Stoker sets
and poisoning the cache through an origin that believes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.hostile.conftest import FrameworkOrigin, exchange, final_status
from tests.integration.conftest import running_proxy


@pytest.mark.parametrize(("path", "name", "value"), [
    ("/varyl/1", "Accept-Language", "fr"),
    ("/varyc/1", "Cookie", "theme=dark"),
])
async def test_a_connection_named_header_cannot_store_a_wrong_variant(
        framework: FrameworkOrigin, tmp_path: Path, mode: str, path: str, name: str,
        value: str) -> None:
    async with running_proxy(framework.url, tmp_path, kind=mode) as proxy:
        hidden = (f"GET {path} HTTP/1.1\r\nHost: a.test\r\n{name}: {value}\r\n"
                  f"Connection: {name.lower()}\r\n\r\n")
        data, _ = await exchange(proxy.url, hidden.encode(), total=3)
        assert final_status(data) == 200
        seen = await proxy.client.get(path, headers={"host": "a.test", name: value})
        bare = await proxy.client.get(path, headers={"host": "a.test"})
    field = "lang" if name == "Accept-Language" else "cookie"
    assert f"{field}={value}".encode() in seen.content, seen.content[:120]
    assert f"{field}=none".encode() in bare.content
    forwarded = [headers for _, _, headers, _ in framework.seen]
    assert name.lower() not in forwarded[0]  # the first request was forwarded without it


async def test_an_ignored_query_parameter_is_not_forwarded(framework: FrameworkOrigin,
                                                           tmp_path: Path, mode: str) -> None:
    async with running_proxy(framework.url, tmp_path, kind=mode, preset="wordpress") as proxy:
        tracked = await proxy.client.get("/reflect/1?utm_source=<script>&page=2&b=1")
        clean = await proxy.client.get("/reflect/1?b=1&page=2")
    assert b"<script>" not in tracked.content and b"<script>" not in clean.content
    assert framework.seen[0][1] == "b=1&page=2"  # the key's query: ignored dropped, sorted
    assert len(framework.seen) == 1 and "hit" in clean.headers["cache-status"]


async def test_a_default_port_in_host_shares_the_key_and_is_not_forwarded(
        framework: FrameworkOrigin, tmp_path: Path, mode: str) -> None:
    async with running_proxy(framework.url, tmp_path, kind=mode) as proxy:
        with_port = await proxy.client.get("/h", headers={"host": "A.test:80"})
        without = await proxy.client.get("/h", headers={"host": "a.test"})
    assert with_port.status_code == 200 and "hit" in without.headers["cache-status"]
    assert [headers["host"] for _, _, headers, _ in framework.seen] == ["a.test"]


OVERRIDES = ("Forwarded: for=198.51.100.1;host=evil.example;proto=https\r\n"
             "X-Original-URL: /admin\r\nX-Rewrite-URL: /admin\r\n"
             "X-HTTP-Method-Override: DELETE\r\nX-Forwarded-Scheme: https\r\n"
             "X-Forwarded-Host: evil.example\r\nX-Host: evil.example\r\n")
SESSION_CRUMBS = ("Cookie: stoker_session=s1; theme=dark\r\n"
                  "Cookie: __Host-stoker_session=s2; lang=fr\r\n")
DROPPED = {"x-original-url", "x-rewrite-url", "x-http-method-override", "x-forwarded-scheme",
           "x-host"}


@pytest.mark.parametrize(("settings", "forwarded", "kept"), [
    ({"trusted_proxies": []}, "for=127.0.0.1;host=a.test;proto=http", set()),
    ({"trusted_proxies": [], "keep_override_headers": ["x-original-url"]},
     "for=127.0.0.1;host=a.test;proto=http", set()),
    ({}, "for=198.51.100.1;host=a.test;proto=https, for=127.0.0.1", set()),
    ({"keep_override_headers": ["x-original-url"]},
     "for=198.51.100.1;host=a.test;proto=https, for=127.0.0.1", {"x-original-url"}),
], ids=["untrusted", "untrusted-kept", "trusted", "trusted-kept"])
async def test_the_origin_sees_neither_the_admin_session_nor_a_clients_overrides(
        framework: FrameworkOrigin, tmp_path: Path, mode: str, settings: dict[str, Any],
        forwarded: str, kept: set[str]) -> None:
    async with running_proxy(framework.url, tmp_path, kind=mode, **settings) as proxy:
        request = f"GET /p/1 HTTP/1.1\r\nHost: a.test\r\n{SESSION_CRUMBS}{OVERRIDES}\r\n"
        data, _ = await exchange(proxy.url, request.encode(), total=3)
    assert final_status(data) == 200
    [(path, _, headers, _)] = framework.seen
    assert path == "/p/1" and b"evil.example" not in data
    assert headers["cookie"] == "theme=dark; lang=fr"  # one line, joined with "; "
    assert headers["forwarded"] == forwarded  # Stoker's own, saying what X-Forwarded-* say
    assert headers["x-forwarded-host"] == "a.test"
    assert headers["x-forwarded-proto"] == forwarded.split("proto=")[1].split(",")[0]
    assert set(headers) & DROPPED == kept


async def test_the_admin_session_cookie_does_not_split_variants(
        framework: FrameworkOrigin, tmp_path: Path, mode: str) -> None:
    async with running_proxy(framework.url, tmp_path, kind=mode) as proxy:
        anonymous = await proxy.client.get("/varyc/1", headers={"host": "a.test"})
        admin = await proxy.client.get("/varyc/1", headers={
            "host": "a.test", "cookie": "stoker_session=s1; __Host-stoker_session=s2"})
    assert anonymous.content == admin.content and b"cookie=none" in admin.content
    assert "hit" in admin.headers["cache-status"] and len(framework.seen) == 1

"""Variant selection, storage and the key use exactly the request as it is forwarded.

Stoker used to strip the headers a client's ``Connection`` names before forwarding, yet
select and store the Vary variant by them (``Accept-Language: fr`` + ``Connection:
accept-language`` stored the page made for no language as the French one); to leave
``ignore_query`` parameters out of the key yet forward them (with ``preset =
"wordpress"``, ``?utm_source=<script>`` was stored as the clean URL's page); and to key
``Host: a.test:80`` as ``a.test`` yet forward it with the port.
"""

from __future__ import annotations

from pathlib import Path

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

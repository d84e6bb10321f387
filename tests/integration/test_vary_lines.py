"""An origin that sends ``Vary`` on several lines (RFC 9110 §5.3: one list) gets every
line honoured.  Stoker used to read the first line alone: with ``Vary: Accept-Encoding``
and ``Vary: Cookie`` a logged-in page was served to anonymous visitors, and WordPress's
REST API (``Vary: Origin`` on a second line) had one site's CORS grant served to every
other origin."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.conftest import serving
from tests.integration.conftest import Proxy, running_proxy

from stoker.asgi import Message, Receive, Send


async def two_line_vary(scope: Message, receive: Receive, send: Send) -> None:
    """Public pages that vary on two lines: Accept-Encoding, then Cookie or Origin."""
    if scope["type"] != "http":
        return
    headers = {k.decode(): v.decode() for k, v in scope["headers"]}
    second = b"Origin" if scope["path"].startswith("/wp-json/") else b"Cookie"
    who = headers.get(second.decode().lower(), "anonymous")
    response = [(b"content-type", b"text/html"), (b"cache-control", b"public, max-age=600"),
                (b"vary", b"Accept-Encoding"), (b"x-other", b"1"), (b"vary", second)]
    if second == b"Origin" and who != "anonymous":
        response.append((b"access-control-allow-origin", who.encode()))
    await send({"type": "http.response.start", "status": 200, "headers": response})
    await send({"type": "http.response.body", "body": f"page for {who}".encode()})


@pytest.fixture
async def proxy(tmp_path: Path) -> AsyncIterator[Proxy]:
    async with serving(two_line_vary) as origin_url, \
            running_proxy(origin_url, tmp_path, kind="stoker") as running:
        yield running


async def test_a_logged_in_page_is_never_served_to_an_anonymous_visitor(proxy: Proxy) -> None:
    member = await proxy.client.get("/page", headers={"cookie": "session=alice"})
    anonymous = await proxy.client.get("/page")
    again = await proxy.client.get("/page")
    assert member.text == "page for session=alice"
    assert anonymous.text == "page for anonymous"
    assert again.text == "page for anonymous" and "hit" in again.headers["cache-status"]


async def test_one_sites_cors_grant_is_never_served_to_another(proxy: Proxy) -> None:
    first = await proxy.client.get("/wp-json/wp/v2/posts", headers={"origin": "https://a.test"})
    second = await proxy.client.get("/wp-json/wp/v2/posts", headers={"origin": "https://b.test"})
    assert first.headers["access-control-allow-origin"] == "https://a.test"
    assert second.headers["access-control-allow-origin"] == "https://b.test"

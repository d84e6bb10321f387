"""Privacy by default: a silent origin that personalises on a cookie never leaks a page.

The origin here behaves like WordPress: no cache headers at all, the body greets
the ``comment_author_*`` cookie's value.  A rule's ttl makes its pages cacheable.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import serving
from tests.integration.admin_harness import purging
from tests.integration.conftest import running_proxy

from stoker.config.rules import parse_rules

Message = MutableMapping[str, Any]
ALICE = {"cookie": "comment_author_abc=Alice; comment_author_email_abc=alice%40example.org"}


class SilentCms:
    """No Cache-Control, Expires or Vary; the page names the commenter it recognises."""

    def __init__(self, delay: float = 0.0, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
        self.delay = delay
        self.headers = list(headers)
        self.hits = 0

    async def __call__(self, scope: Message, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            return
        await receive()
        self.hits += 1
        cookies = dict(part.strip().split("=", 1) for part in _cookie(scope).split(";")
                       if "=" in part)
        who = [value for name, value in cookies.items() if name.startswith("comment_author_")]
        if self.delay:
            await asyncio.sleep(self.delay)
        body = b"<p>Leave a reply, " + (who[0].encode() if who else b"stranger") + b"</p>"
        await send({"type": "http.response.start", "status": 200,
                    "headers": [*self.headers, (b"content-type", b"text/html")]})
        await send({"type": "http.response.body", "body": body})


def _cookie(scope: Message) -> str:
    return "; ".join(v.decode() for k, v in scope["headers"] if k == b"cookie")


RULES = parse_rules([{"path": "/", "ttl": "10m", "strip_cookies": ["_ga*"],
                      "ignore_cookies": ["cookie_consent"]}])


async def test_commenter_first_never_fills_the_shared_cache(tmp_path: Path) -> None:
    cms = SilentCms()
    async with serving(cms) as origin_url, \
            running_proxy(origin_url, tmp_path, rules=RULES) as proxy:
        mine = await proxy.client.get("/post-6/", headers=ALICE)
        anonymous = await proxy.client.get("/post-6/")
    assert b"Alice" in mine.content
    assert "fwd=bypass" in mine.headers["cache-status"]
    assert "detail=cookie" in mine.headers["cache-status"]
    assert b"Alice" not in anonymous.content and b"stranger" in anonymous.content


async def test_commenter_after_anonymous_gets_her_own_page(tmp_path: Path) -> None:
    cms = SilentCms()
    async with serving(cms) as origin_url, \
            running_proxy(origin_url, tmp_path, rules=RULES) as proxy:
        await proxy.client.get("/post-7/")
        shared = await proxy.client.get("/post-7/")
        mine = await proxy.client.get("/post-7/", headers=ALICE)
    assert "hit" in shared.headers["cache-status"]
    assert b"Alice" in mine.content and "hit" not in mine.headers["cache-status"]


async def test_stripped_and_ignored_cookies_keep_the_page_shared(tmp_path: Path) -> None:
    cms = SilentCms()
    async with serving(cms) as origin_url, \
            running_proxy(origin_url, tmp_path, rules=RULES) as proxy:
        await proxy.client.get("/p/", headers={"cookie": "_ga=GA1.1; cookie_consent=yes"})
        again = await proxy.client.get("/p/", headers={"cookie": "cookie_consent=no"})
    assert "hit" in again.headers["cache-status"]
    assert cms.hits == 1


async def test_concurrent_commenter_never_reaches_waiting_visitors(tmp_path: Path) -> None:
    cms = SilentCms(delay=0.2)
    async with serving(cms) as origin_url, \
            running_proxy(origin_url, tmp_path, rules=RULES) as proxy:
        commenter = asyncio.create_task(proxy.client.get("/hot/", headers=ALICE))
        await asyncio.sleep(0.05)  # her request is at the origin first
        visitors = await asyncio.gather(*(proxy.client.get("/hot/") for _ in range(20)))
        later = await proxy.client.get("/hot/")
        mine = await commenter
    assert b"Alice" in mine.content
    assert all(b"Alice" not in response.content for response in [*visitors, later])


async def test_origin_that_vouches_is_shared_as_rfc_9111_says(tmp_path: Path) -> None:
    cms = SilentCms(headers=((b"cache-control", b"public, max-age=60"),))
    async with serving(cms) as origin_url, \
            running_proxy(origin_url, tmp_path, rules=RULES) as proxy:
        first = await proxy.client.get("/v/", headers={"cookie": "theme=dark"})
        second = await proxy.client.get("/v/", headers={"cookie": "other=1"})
    # streamed (no Content-Length): its head went out before it was stored, so it says
    # only fwd; the next request shows it was
    assert first.headers["cache-status"].startswith("stoker; fwd=uri-miss; fwd-status=200")
    assert "hit" in second.headers["cache-status"]


async def test_cache_with_cookies_opts_a_rule_out(tmp_path: Path) -> None:
    rules = parse_rules([{"path": "/", "ttl": "10m", "cache_with_cookies": True}])
    cms = SilentCms()
    async with serving(cms) as origin_url, \
            running_proxy(origin_url, tmp_path, rules=rules) as proxy:
        await proxy.client.get("/o/", headers={"cookie": "theme=dark"})
        again = await proxy.client.get("/o/")
    assert "hit" in again.headers["cache-status"]


async def test_bypasses_are_counted_and_logged_once_per_cookie_name(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cms = SilentCms()
    async with serving(cms) as origin_url, \
            running_proxy(origin_url, tmp_path, rules=RULES) as proxy:
        with caplog.at_level(logging.WARNING, logger="stoker.proxy"):
            for page in range(3):
                await proxy.client.get(f"/c/{page}", headers={"cookie": "_hjSession=1; x=2"})
        counts = dict(proxy.stoker.pipeline.cookie_bypasses)
    assert counts == {"_hjSession": 3, "x": 3}
    warned = [r.getMessage() for r in caplog.records if "not caching pages" in r.getMessage()]
    assert len(warned) == 2 and any("'_hjSession'" in text for text in warned)
    assert all("=1" not in text for text in warned)  # names, never values


async def test_status_reports_bypasses_per_cookie_with_their_share(tmp_path: Path) -> None:
    cms = SilentCms()
    async with serving(cms) as origin_url, \
            purging(origin_url, tmp_path, rules=RULES) as (proxy, admin):
        for page in range(3):
            await proxy.client.get(f"/s/{page}", headers={"cookie": "_hjSession=1"})
        await proxy.client.get("/s/0")
        status = (await admin.client.get("/api/status")).json()
    assert status["cookie_bypasses"] == [{"cookie": "_hjSession", "requests": 3,
                                          "share": 0.75}]

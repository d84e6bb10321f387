"""``preset = "wordpress"`` in front of an origin that behaves like WordPress.

The origin sends no cache headers at all, greets a commenter by the name in their
``comment_author_*`` cookie and shows a logged-in user (``wordpress_logged_in_*``) the
admin bar; it shows a commenter their held comment at ``?unapproved=…&moderation-hash=…``
with ``Cache-Control: max-age=600, must-revalidate``, as a site's headers may say.
Stoker runs with the preset and one rule of the user's (``path = "/wp/"``, ``ttl =
"10m"``), loaded from ``stoker.toml`` like ``stoker serve`` does.  What must hold:
anonymous pages are cached; a commenter's or an editor's page never reaches anyone
else, and the shared copy never reaches them; the admin and a held comment's page are
never cached; analytics cookies never reach the origin, consent cookies keep pages
shared.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from tests.conftest import serving
from tests.integration.conftest import proxy_for

from stoker.asgi import Message, Receive, Send
from stoker.config.rules import cookie_names
from stoker.config.settings import load_settings

CONFIG = 'preset = "wordpress"\n\n[[rule]]\npath = "/wp/"\nttl = "10m"\n'
ALICE = {"cookie": "comment_author_abc=Alice; comment_author_email_abc=alice%40example.org"}
EDITOR = {"cookie": "wordpress_logged_in_abc=editor%7C1700000000%7Ctoken"}
# What WordPress shows at ?unapproved=<id>&moderation-hash=<hash>, where it sends a
# commenter whose comment awaits moderation (no cookie needed: the hash proves it is theirs).
HELD = b"<p>Alice (alice@example.org): Your comment is awaiting moderation.</p>"


class WordPressLike:
    """Pages without cache headers, personalised by WordPress's cookies; counts hits."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.cookies: list[list[str]] = []

    def page(self, path: str, cookie: str) -> bytes:
        values = dict(part.strip().split("=", 1) for part in cookie.split(";") if "=" in part)
        author = next((v for k, v in values.items() if k.startswith("comment_author_")
                       and not k.startswith("comment_author_email_")), "guest")
        bar = "<div id='wpadminbar'>Howdy, editor</div>" if any(
            name.startswith("wordpress_logged_in_") for name in values) else ""
        return f"{bar}<h1>{path}</h1><p>hello {author}</p>".encode()

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = dict(scope["headers"])
        cookie = headers.get(b"cookie", b"").decode()
        self.hits[scope["path"]] += 1
        self.cookies.append(cookie_names(cookie))
        body = self.page(scope["path"], cookie)
        extra = []
        if b"unapproved=" in scope["query_string"]:  # the commenter's own held comment
            body += HELD
            extra = [(b"cache-control", b"max-age=600, must-revalidate")]
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/html"), (b"content-length", str(len(body)).encode()),
            *extra]})
        await send({"type": "http.response.body", "body": body})


@dataclass
class Site:
    origin: WordPressLike
    client: httpx.AsyncClient


@pytest.fixture
async def site(tmp_path: Path) -> AsyncIterator[Site]:
    origin = WordPressLike()
    config = tmp_path / "stoker.toml"
    config.write_text(CONFIG, encoding="utf-8")
    async with AsyncExitStack() as stack:
        origin_url = await stack.enter_async_context(serving(origin, kind="uvicorn"))
        settings = load_settings(config_path=config, env={}, cli={
            "origin": origin_url, "data_dir": str(tmp_path / "data")})
        proxy = await stack.enter_async_context(proxy_for(settings))
        yield Site(origin, proxy.client)


def is_hit(response: httpx.Response) -> bool:
    return "hit" in [part.strip() for part in response.headers["cache-status"].split(";")]


async def test_anonymous_pages_are_cached(site: Site) -> None:
    first = await site.client.get("/wp/11")
    second = await site.client.get("/wp/11")
    assert "stored" in first.headers["cache-status"] and is_hit(second)
    assert site.origin.hits["/wp/11"] == 1


async def test_a_commenters_page_is_never_shared(site: Site) -> None:
    alice = await site.client.get("/wp/10", headers=ALICE)
    anonymous = await site.client.get("/wp/10")
    alice_again = await site.client.get("/wp/10", headers=ALICE)
    assert "hello Alice" in alice.text and "hello Alice" in alice_again.text
    assert "Alice" not in anonymous.text
    assert not is_hit(alice) and not is_hit(alice_again)


async def test_an_editor_never_gets_or_leaks_the_shared_copy(site: Site) -> None:
    anonymous = await site.client.get("/wp/12")
    editor = await site.client.get("/wp/12", headers=EDITOR)
    after = await site.client.get("/wp/12")
    assert "wpadminbar" in editor.text and "fwd=bypass" in editor.headers["cache-status"]
    assert "wpadminbar" not in anonymous.text and "wpadminbar" not in after.text
    assert is_hit(after)


async def test_the_admin_is_never_cached(site: Site) -> None:
    for _ in range(2):
        admin = await site.client.get("/wp-admin/edit.php")
        assert "fwd=bypass" in admin.headers["cache-status"]
    assert site.origin.hits["/wp-admin/edit.php"] == 2


async def test_analytics_cookies_never_reach_the_origin_and_consent_keeps_pages_shared(
        site: Site) -> None:
    visitor = {"cookie": "_ga=GA1.1.1.2; _gid=GA1.1.3.4; cookie_consent=yes"}
    first = await site.client.get("/wp/13", headers=visitor)
    second = await site.client.get("/wp/13", headers={"cookie": "cookie_consent=no"})
    assert site.origin.cookies == [["cookie_consent"]]
    assert "stored" in first.headers["cache-status"] and is_hit(second)


async def test_a_commenters_held_comment_page_is_never_shared(site: Site) -> None:
    held = "/wp/14/?unapproved=9&moderation-hash=5f2c8e"
    alice = await site.client.get(held)
    other = await site.client.get(held)
    assert HELD.decode() in alice.text and HELD.decode() in other.text  # each from WordPress
    for response in (alice, other):
        assert "fwd=bypass" in response.headers["cache-status"], response.headers
    assert site.origin.hits["/wp/14/"] == 2

"""A real Django site (sessions, auth, CSRF, ``Vary: Cookie``) behind Stoker, configured
with the Django / Wagtail guide's example read from docs/guides/django-wagtail.md itself.

What must hold: anonymous pages are cached once per site, not once per visitor
(``csrftoken``, ``_ga``, ``_gid`` do not split them); forms keep working, also from a
second tab; form pages, which embed a visitor's token, are never stored; a logged-in
visitor never gets the anonymous copy and her pages are never served to anyone else.
"""

from __future__ import annotations

import importlib
import re
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from django.core.handlers.asgi import ASGIHandler
from django.test import override_settings
from tests.conftest import serving
from tests.integration.conftest import proxy_for

from stoker.asgi import Message, Receive, Send
from stoker.config.settings import Settings, load_settings

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "django-wagtail.md"
PASSWORDS = {"alice": "alice-password", "bob": "bob-password"}
ANALYTICS = {"_ga": "GA1.1.111.222", "_gid": "GA1.1.333.444"}
TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')

Browser = httpx.AsyncClient


def guide_django_example() -> str:
    """The TOML of the guide's "Django / Wagtail:" example."""
    text = GUIDE.read_text(encoding="utf-8")
    _, found, after = text.partition("Django / Wagtail:")
    _, fence, block = after.partition("```toml\n")
    if not found or not fence:
        raise AssertionError("the guide has no ```toml block after 'Django / Wagtail:'")
    return block.partition("```")[0]


def guide_settings(origin_url: str, tmp_path: Path) -> Settings:
    """Settings from the guide's example, with the test's origin and data directory."""
    path = tmp_path / "stoker.toml"
    path.write_text(guide_django_example(), encoding="utf-8")
    return load_settings(config_path=path, env={},
                         cli={"origin": origin_url, "data_dir": str(tmp_path / "data")})


class CountingOrigin:
    """The Django ASGI app, counting the requests that reach it by (method, path)."""

    def __init__(self, app: ASGIHandler) -> None:
        self.app = app
        self.hits: Counter[tuple[str, str]] = Counter()

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        self.hits[(scope["method"], scope["path"])] += 1
        await self.app(scope, receive, send)


@dataclass
class Site:
    hits: Counter[tuple[str, str]]
    browser: Callable[[], Browser]


@pytest.fixture(scope="module")
def django_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ASGIHandler]:
    """The Django site with a migrated database and two users."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_SITE_DATA_DIR", str(tmp_path_factory.mktemp("django-site")))
        patch.setenv("DJANGO_SETTINGS_MODULE", "tests.integration.django_site.settings")
        project = importlib.import_module("tests.integration.django_site.asgi")  # django.setup()
        from django.contrib.auth.models import User
        from django.core.management import call_command
        from django.db import connections

        call_command("migrate", verbosity=0)
        for name, password in PASSWORDS.items():
            User.objects.create_user(name, password=password)
        yield project.application
        connections.close_all()


@pytest.fixture
async def site(django_app: ASGIHandler, tmp_path: Path) -> AsyncIterator[Site]:
    """Django on uvicorn, Stoker in front as the guide says, and a browser factory."""
    origin = CountingOrigin(django_app)
    async with AsyncExitStack() as stack:
        origin_url = await stack.enter_async_context(serving(origin, kind="uvicorn"))
        proxy = await stack.enter_async_context(
            proxy_for(guide_settings(origin_url, tmp_path)))

        def browser() -> Browser:
            client = Browser(base_url=proxy.url, timeout=30)
            stack.push_async_callback(client.aclose)
            return client

        yield Site(origin.hits, browser)


def status(response: httpx.Response) -> str:
    return response.headers["cache-status"]


def form_token(page: httpx.Response) -> str:
    found = TOKEN.search(page.text)
    assert found is not None, f"no CSRF token in {page.request.url}: {page.text!r}"
    return found.group(1)


def with_analytics(browser: Browser) -> Browser:
    for name, value in ANALYTICS.items():
        browser.cookies.set(name, value, domain="127.0.0.1")
    return browser


async def log_in(browser: Browser, username: str) -> None:
    page = await browser.get("/accounts/login/")
    response = await browser.post("/accounts/login/", data={
        "csrfmiddlewaretoken": form_token(page), "username": username,
        "password": PASSWORDS[username]})
    assert response.status_code == 302, response.text
    assert response.headers["location"] == "/account/"
    assert "sessionid" in browser.cookies


async def test_visitors_with_csrf_and_analytics_cookies_share_the_anonymous_copy(
        site: Site) -> None:
    anonymous = await site.browser().get("/articles/1/")
    visitor = with_analytics(site.browser())
    await visitor.get("/contact/")  # a real csrftoken from Django
    assert "csrftoken" in visitor.cookies
    shared = await visitor.get("/articles/1/")
    assert anonymous.headers["vary"] == "Cookie"
    assert "stored" in status(anonymous)
    assert "hit" in status(shared) and shared.text == anonymous.text
    assert site.hits[("GET", "/articles/1/")] == 1


async def test_form_works_from_two_tabs_and_form_pages_are_never_stored(site: Site) -> None:
    browser = with_analytics(site.browser())
    first_tab = await browser.get("/contact/")
    token_cookie = browser.cookies["csrftoken"]
    second_tab = await browser.get("/contact/")
    for tab in (first_tab, second_tab):
        sent = await browser.post("/contact/", data={
            "csrfmiddlewaretoken": form_token(tab), "message": "hello"})
        assert sent.status_code == 302, f"POST from a tab got {sent.status_code}"
    assert browser.cookies["csrftoken"] == token_cookie  # the token is stable
    assert "detail=set-cookie" in status(first_tab)
    assert "detail=set-cookie" in status(second_tab)  # Django re-sends the cookie
    other = site.browser()
    other_page = await other.get("/contact/")
    assert "detail=set-cookie" in status(other_page)
    assert other.cookies["csrftoken"] != token_cookie
    assert site.hits[("GET", "/contact/")] == 3


async def test_cookie_that_changes_the_page_gets_its_own_page(site: Site) -> None:
    browser = site.browser()
    form = await browser.get("/contact/")
    sent = await browser.post("/contact/", data={
        "csrfmiddlewaretoken": form_token(form), "message": "hello"})
    assert sent.headers["location"] == "/" and "messages" in browser.cookies
    cached = await site.browser().get("/")  # the anonymous copy, stored now
    thanked = await browser.get("/")
    again = await site.browser().get("/")
    assert "stored" in status(cached) and "Thanks" not in cached.text
    assert "fwd=bypass" in status(thanked)  # messages is personal: the preset bypasses it
    assert "Thanks for your message: hello" in thanked.text
    assert "hit" in status(again) and "Thanks" not in again.text


async def test_logged_in_visitor_never_gets_or_leaks_a_cached_page(site: Site) -> None:
    anonymous = site.browser()
    await anonymous.get("/articles/1/")
    alice = site.browser()
    await log_in(alice, "alice")
    article = await alice.get("/articles/1/")
    account = await alice.get("/account/")
    assert "fwd=bypass" in status(article) and "Hello alice" in article.text
    assert "fwd=bypass" in status(account) and "Account of alice" in account.text
    for stranger in (anonymous, with_analytics(site.browser())):
        refused = await stranger.get("/account/")
        assert refused.status_code == 302 and "alice" not in refused.text
        page = await stranger.get("/articles/1/")
        assert "hit" in status(page) and "alice" not in page.text
    bob = site.browser()
    await log_in(bob, "bob")
    assert "Account of bob" in (await bob.get("/account/")).text
    assert site.hits[("GET", "/account/")] == 4


async def test_form_pages_stay_private_with_csrf_use_sessions(site: Site) -> None:
    with override_settings(CSRF_USE_SESSIONS=True):
        browser = site.browser()
        first_tab = await browser.get("/contact/")
        second_tab = await browser.get("/contact/")
        other = await site.browser().get("/contact/")
        sent = await browser.post("/contact/", data={
            "csrfmiddlewaretoken": form_token(first_tab), "message": "hello"})
    assert "csrftoken" not in browser.cookies and "sessionid" in browser.cookies
    assert "detail=set-cookie" in status(first_tab)
    assert "fwd=bypass" in status(second_tab)  # the session cookie bypasses the cache
    assert "detail=set-cookie" in status(other)
    assert sent.status_code == 302, sent.text
    assert site.hits[("GET", "/contact/")] == 3

"""The dashboard mounted in an app (``stoker.asgi(app, admin="/stoker")``): every page,
asset, link, form, API call and redirect is under the mount path, a purge goes through
the cache page's form, and in a real browser the overview renders and its event stream
connects."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from examples.fastapi_site import make_app
from playwright.async_api import Browser, expect
from tests.conftest import free_port, serving
from tests.integration.browser_harness import console_errors, log_in, needs_chromium, tab

from stoker import Stoker
from stoker.asgi import ASGIApp

SITE = "http://testserver"
TOKEN = "t0ken"
MOUNT = "/stoker"
URL_ATTRS = re.compile(r'\s(href|src|action|data-api)="([^"]*)"')


@pytest.fixture
async def blog(tmp_path: Path) -> AsyncIterator[tuple[Stoker, ASGIApp]]:
    stoker = Stoker(data_dir=str(tmp_path), site_url=SITE, warm=True, admin_token=TOKEN)
    async with stoker:
        yield stoker, make_app(stoker, {"hello": "Hello.", "second": "Second."})


def urls_in(page: str) -> list[tuple[str, str]]:
    """Every ``(attribute, URL)`` of a page's HTML."""
    return [(name, value.replace("&amp;", "&")) for name, value in URL_ATTRS.findall(page)]


async def test_the_mounted_dashboard_keeps_every_url_under_its_mount_path(
        blog: tuple[Stoker, ASGIApp]) -> None:
    _, app = blog
    same_origin = {"origin": SITE}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url=SITE) as browser:
        away = await browser.get(f"{MOUNT}/")
        assert away.status_code == 303 and away.headers["location"] == f"{MOUNT}/login"
        form = await browser.get(f"{MOUNT}/login")
        assert form.status_code == 200
        assert ("action", f"{MOUNT}/login") in urls_in(form.text)
        assert all(url.startswith(f"{MOUNT}/") for _, url in urls_in(form.text))
        wrong = await browser.post(f"{MOUNT}/login", data={"token": "nope"}, headers=same_origin)
        assert wrong.status_code == 401
        login = await browser.post(f"{MOUNT}/login", data={"token": TOKEN}, headers=same_origin)
        assert login.status_code == 303 and login.headers["location"] == f"{MOUNT}/"
        cookie = login.headers["set-cookie"]
        assert "Path=/;" in cookie and "HttpOnly" in cookie  # host-wide: see docs/python.md
        session = {"cookie": cookie.split(";")[0], **same_origin}

        overview = await browser.get(f"{MOUNT}/", headers=session)
        assert overview.status_code == 200 and f'data-root="{MOUNT}"' in overview.text
        pages, seen, found = [f"{MOUNT}/"], set(), []
        while pages:  # the overview and every page its links lead to
            path = pages.pop()
            if path in seen:
                continue
            seen.add(path)
            answer = await browser.get(path, headers=session)
            assert answer.status_code == 200, path
            for name, url in urls_in(answer.text):
                assert url.startswith(f"{MOUNT}/"), (path, name, url)
                found.append((name, url))
                if name == "href" and "/static/" not in url:
                    pages.append(url)
        hrefs = {url for name, url in found if name in ("href", "src")}
        assert {f"{MOUNT}/static/dashboard.js", f"{MOUNT}/static/dashboard.css",
                f"{MOUNT}/static/favicon.svg", f"{MOUNT}/cache", f"{MOUNT}/audit"} <= hrefs
        for url in hrefs | {url for name, url in found if name == "action"
                            and not url.endswith(("/login", "/logout"))}:
            assert (await browser.get(url, headers=session)).status_code == 200, url
        apis = {url for name, url in found if name == "data-api"}
        assert f"{MOUNT}/api/purge" in apis
        assert all(url.startswith(f"{MOUNT}/api/") for url in apis)
        script = (await browser.get(f"{MOUNT}/static/dashboard.js")).text
        assert 'atRoot("/api/events")' in script and 'atRoot("/api/status")' in script
        assert (await browser.get(f"{MOUNT}/api/status", headers=session)).status_code == 200

        await browser.get("/posts/second")
        assert "hit" in (await browser.get("/posts/second")).headers["cache-status"]
        cache_page = (await browser.get(f"{MOUNT}/cache", headers=session)).text
        purge_api = re.search(r'<form class="tool purge" data-api="([^"]+)"', cache_page)
        assert purge_api is not None and purge_api[1] == f"{MOUNT}/api/purge"
        purged = await browser.post(purge_api[1], json={"tags": ["post-second"], "soft": False},
                                    headers=session)
        assert purged.status_code == 200 and purged.json()["purged"] == 1
        assert "fwd=uri-miss" in (await browser.get("/posts/second")).headers["cache-status"]
        audit = await browser.get(f"{MOUNT}/audit", params={"action": "purge"}, headers=session)
        assert "post-second" in audit.text

        logout = await browser.post(f"{MOUNT}/logout", headers=session)
        assert logout.status_code == 303 and logout.headers["location"] == f"{MOUNT}/login"
        again = await browser.get(f"{MOUNT}/cache", headers=session)
        assert again.status_code == 303 and again.headers["location"] == f"{MOUNT}/login"


@needs_chromium
async def test_the_mounted_overview_renders_and_goes_live_in_a_browser(
        tmp_path: Path, browser: Browser) -> None:
    port = free_port()
    site = f"http://127.0.0.1:{port}"
    stoker = Stoker(data_dir=str(tmp_path), site_url=site, admin_token=TOKEN)
    async with stoker:
        app = make_app(stoker, {"hello": "Hello."})
        async with serving(app, port=port) as url, tab(browser) as page:
            errors = console_errors(page)
            await log_in(page, f"{url}{MOUNT}", TOKEN)
            await expect(page.locator("#live")).to_have_text("live", timeout=10_000)
            sheets = await page.evaluate("document.styleSheets.length")
            assert sheets == 1  # the stylesheet came from /stoker/static
            await page.get_by_role("link", name="Cache", exact=True).click()
            await page.wait_for_url(f"{url}{MOUNT}/cache")
            await expect(page.locator("#live")).to_have_text("live", timeout=10_000)
            await page.get_by_label("Tags").fill("home")
            await page.get_by_role("button", name="Purge…").click()
            await page.locator("#confirm-ok").click()
            await expect(page.locator("#flash")).to_contain_text("Entries purged",
                                                                 timeout=10_000)
            await page.get_by_role("button", name="Log out").click()
            await page.wait_for_url(f"{url}{MOUNT}/login")
            assert errors == []  # no CSP violation, no missing asset, no script error

"""The dashboard in a real browser (Debian's Chromium, driven by Playwright; never a
downloaded browser): log in, watch the overview follow the traffic live, log out, and a
revoked session sent back to the login page.  Screenshots at 1280x800 and on a 390-px
phone go to ``tests/artifacts/`` (ignored by git)."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, Page, expect
from tests.integration.admin_harness import CACHEABLE, TOKEN
from tests.integration.browser_harness import (
    SIZES,
    console_errors,
    needs_chromium,
    shoot,
)
from tests.integration.browser_harness import log_in as log_in_with
from tests.integration.conftest import Origin
from tests.integration.dashboard_harness import dashboard

from stoker.admin.sessions import COOKIE

pytestmark = needs_chromium


async def log_in(page: Page, url: str) -> None:
    await log_in_with(page, url, TOKEN)


async def test_log_in_watch_the_overview_live_and_log_out(origin: Origin, tmp_path: Path,
                                                          browser: Browser) -> None:
    origin.app.set("/page", headers=CACHEABLE, body=b"x" * 5000)
    async with dashboard(origin.url, tmp_path / "d") as dash:
        page = await browser.new_page(viewport=SIZES["desktop"])
        errors = console_errors(page)
        await page.goto(f"{dash.url}/login")
        await shoot(page, "login")
        await log_in(page, dash.url)
        await expect(page.locator("#live")).to_have_text("live", timeout=10_000)
        cache_share = page.locator('[data-path="hit_ratio"]')
        await expect(cache_share).to_have_text("—")  # no request yet
        for _ in range(4):
            await dash.proxy.client.get("/page")  # a miss, then hits
        await expect(cache_share).to_have_text("75.0 %", timeout=10_000)  # pushed, no reload
        outcomes = page.locator('[data-table="outcomes"]')
        await expect(outcomes).to_contain_text("hit", timeout=10_000)
        await expect(page.locator('[data-chart="requests"] rect').first).to_be_attached()
        await shoot(page, "overview")
        await page.get_by_role("button", name="Log out").click()
        await page.wait_for_url("**/login")
        await page.goto(f"{dash.url}/")
        await page.wait_for_url("**/login")  # the session is gone
        assert errors == []  # no CSP violation, no script error, no missing asset
        await page.close()


async def test_a_revoked_session_lands_on_the_login_page(origin: Origin, tmp_path: Path,
                                                         browser: Browser) -> None:
    async with dashboard(origin.url, tmp_path / "d") as dash:
        context = await browser.new_context()
        page = await context.new_page()
        await log_in(page, dash.url)
        await expect(page.locator("#live")).to_have_text("live", timeout=10_000)
        cookie = next(c["value"] for c in await context.cookies() if c["name"] == COOKIE)
        assert await dash.side.sessions.close(cookie) is not None  # revoked on the server
        # the tab is put away and shown again: the stream reopens, is refused, and the
        # page probes /api/status, whose 401 sends it to the login page
        await page.evaluate("window.dispatchEvent(new PageTransitionEvent('pagehide'))")
        await expect(page.locator("#live")).to_have_text("paused")
        await page.evaluate("window.dispatchEvent(new PageTransitionEvent('pageshow'))")
        await page.wait_for_url("**/login", timeout=15_000)
        await context.close()

"""The Why-not-cached and Schedule pages in Chromium: the report follows the traffic live
(its region swapped in, no reload), a URL's verdict from the lookup form, the schedule
of a running warmer; screenshots of both."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, expect
from tests.integration.admin_harness import CACHEABLE, TOKEN
from tests.integration.browser_harness import console_errors, log_in, needs_chromium, shoot, tab
from tests.integration.conftest import Origin
from tests.integration.dashboard_harness import dashboard
from tests.integration.warm_site import TOKEN as WARM_TOKEN
from tests.integration.warm_site import SiteOrigin, site_origin, warming

pytestmark = needs_chromium


async def test_the_why_page_follows_the_traffic_and_judges_one_url(
        origin: Origin, tmp_path: Path, browser: Browser) -> None:
    origin.app.set("/blog/a", headers=[("content-type", "text/html")], body=b"no lifetime")
    origin.app.set("/shop", headers=[("cache-control", "private")], body=b"mine")
    origin.app.set("/p", headers=CACHEABLE, body=b"kept")
    async with dashboard(origin.url, tmp_path / "d") as dash, tab(browser) as page:
        await dash.proxy.client.get("/blog/a")
        errors = console_errors(page)
        await log_in(page, dash.url, TOKEN)
        await page.goto(f"{dash.url}/why")
        await expect(page.locator("#live")).to_have_text("live", timeout=10_000)
        await expect(page.locator("#reason-no-freshness")).to_be_visible()
        marker = await page.evaluate_handle("document.querySelector('[data-live]')")
        for _ in range(3):
            await dash.proxy.client.get("/shop", headers={"cookie": "_ga=GA1.2.3"})
        await expect(page.locator("#reason-private")).to_be_visible(timeout=10_000)
        assert await page.evaluate("(old) => !old.isConnected", marker)  # swapped, no reload
        await expect(page.locator("#reason-private")).to_contain_text("right not to cache")
        await expect(page.locator("#reason-no-freshness pre.config")).to_contain_text("ttl")
        await shoot(page, "why")
        await dash.proxy.client.get("/p")
        await page.get_by_label("Why is this URL not cached?").fill(
            f"{dash.proxy.client.base_url}/p")
        await page.get_by_role("button", name="Ask").click()
        await expect(page.locator(".verdict")).to_contain_text("cached: 1 variant")
        assert errors == []


async def test_the_schedule_page_shows_the_warmer_s_deadlines(
        tmp_path: Path, browser: Browser) -> None:
    async with site_origin(SiteOrigin(pages=3)) as url, warming(url, tmp_path) as warm, \
            tab(browser) as page:
        errors = console_errors(page)
        await log_in(page, warm.admin_url, WARM_TOKEN)
        await page.goto(f"{warm.admin_url}/schedule")
        await expect(page.locator("#live")).to_have_text("live", timeout=10_000)
        rows = page.locator("[data-live] tbody tr")
        await expect(rows).to_have_count(7)
        await expect(page.locator("[data-live]")).to_contain_text("Daily refresh")
        await expect(page.locator("[data-live]")).to_contain_text("origin was down")
        await expect(page.locator("[data-live]")).to_contain_text("Delete audit records")
        await shoot(page, "schedule")
        assert errors == []

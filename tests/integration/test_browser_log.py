"""The Log page in a real browser: requests arrive live (a miss, then a fast-path hit),
a filter narrows them, a bad filter is said next to the form, pause holds new lines;
no console error; screenshots at 1280 and 390 px (``tests/artifacts/log-1280.png``,
``log-390.png``), neither scrolling sideways."""

from __future__ import annotations

import shutil
from pathlib import Path

from playwright.async_api import Browser, expect
from tests.integration.admin_harness import CACHEABLE, TOKEN
from tests.integration.browser_harness import (
    ARTIFACTS,
    console_errors,
    log_in,
    needs_chromium,
    shoot,
    tab,
)
from tests.integration.conftest import Origin
from tests.integration.dashboard_harness import dashboard

pytestmark = needs_chromium

LONG = "/blog/" + "a-very-long-slug-that-never-ends-" * 6


async def test_requests_arrive_live_and_a_filter_narrows_them(
        origin: Origin, tmp_path: Path, browser: Browser) -> None:
    origin.app.set("/blog/a", headers=CACHEABLE, body=b"<p>a</p>" * 300)
    origin.app.set(LONG, headers=CACHEABLE, body=b"long")
    origin.app.set("/broken", status=502, body=b"bad")
    async with dashboard(origin.url, tmp_path / "d", kind="stoker") as dash, \
            tab(browser) as page:
        errors = console_errors(page)
        await log_in(page, dash.url, TOKEN)
        await page.get_by_role("link", name="Log").click()
        lines = page.locator("#log-lines li")
        await expect(lines.first).to_contain_text("No requests yet")
        await expect(page.locator("#log-state")).to_contain_text("Live: showing everything")
        site = dash.proxy.client
        for path in ("/blog/a", "/blog/a", LONG, "/broken"):
            await site.get(path)
        await expect(lines).to_have_count(4)
        await expect(lines.nth(0)).to_contain_text("502")
        await expect(lines.nth(3)).to_contain_text("miss")
        await expect(lines.nth(2).locator(".tag")).to_have_text("hit")
        await shoot(page, "log")
        ARTIFACTS.mkdir(exist_ok=True)
        for size, width in (("desktop", 1280), ("phone", 390)):
            shutil.copy(ARTIFACTS / f"dashboard-log-{size}.png", ARTIFACTS / f"log-{width}.png")

        await page.get_by_label("Status").fill("5xx")
        await page.get_by_role("button", name="Filter").click()
        await expect(page.locator("#log-state")).to_contain_text("Live: showing status 5xx")
        await site.get("/blog/a")
        await site.get("/broken")
        await expect(lines).to_have_count(1)
        await expect(lines.first).to_contain_text("/broken")

        await page.get_by_role("button", name="Pause").click()
        await site.get("/broken")
        await expect(page.locator("#log-state")).to_contain_text("Paused: 1 new")
        await expect(lines).to_have_count(1)
        await page.get_by_role("button", name="Resume").click()
        await expect(lines).to_have_count(2)

        await page.get_by_label("Status").fill("6xx")
        await page.get_by_role("button", name="Filter").click()
        await expect(page.get_by_role("alert")).to_contain_text("status: expected a code")
        assert await page.locator("#log-lines").count() == 0
    assert errors == []

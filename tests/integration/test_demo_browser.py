"""The demo's edit flow in a real browser (Debian's Chromium, driven by Playwright).

A visitor reads page 7, presses "Edit this page", and follows the saved page's "Back to
page 7" link: the browser must show revision 2 at once.  The demo origin gives Stoker
the page's lifetime (``CDN-Cache-Control``) and browsers ``max-age=0``, so the browser
revalidates through Stoker, whose copy the edit purged, instead of showing its own.
"""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, expect
from tests.integration.browser_harness import log_in, needs_chromium, shoot, tab
from tests.integration.demo_harness import TOKEN, Demo, demo, running_demo

__all__ = ["demo"]  # the fixture

pytestmark = needs_chromium


async def test_back_to_the_page_after_an_edit_shows_the_new_revision(
        demo: Demo, browser: Browser) -> None:
    page = await browser.new_page()
    await page.goto(f"{demo.url}/page/7")
    assert await page.locator("text=Revision 1.").count() == 1
    await page.get_by_role("button", name="Edit this page").click()
    await page.wait_for_url("**/page/7/saved**")
    await page.get_by_role("link", name="Back to page 7").click()
    await page.wait_for_url("**/page/7")
    assert await page.locator("text=Revision 2.").count() == 1, await page.content()


async def test_an_edit_shows_up_live_on_the_dashboard(demo: Demo, browser: Browser) -> None:
    admin = str(demo.admin.base_url).rstrip("/")
    async with tab(browser) as audit, tab(browser) as warm, tab(browser) as site:
        await log_in(audit, admin, TOKEN)
        await log_in(warm, admin, TOKEN)
        await audit.goto(f"{admin}/audit")
        await warm.goto(f"{admin}/warm")
        for page in (audit, warm):
            await expect(page.locator("#live")).to_have_text("live", timeout=10_000)
        purges = audit.locator("[data-live] tbody tr", has_text="page-7")
        rewarms = warm.locator("[data-live] tbody tr", has_text="purge")
        await expect(purges).to_have_count(0)
        await expect(rewarms).to_have_count(0)
        await site.goto(f"{demo.url}/page/7")
        await site.get_by_role("button", name="Edit this page").click()
        await site.wait_for_url("**/page/7/saved**")
        # pushed to both pages, neither reloaded: the purge at once, the re-warm of the
        # edited page once the re-warm delay is over
        await expect(purges).to_have_count(1, timeout=10_000)
        await expect(purges).to_contain_text("purge")
        await expect(rewarms).to_have_count(1, timeout=30_000)
        await expect(rewarms.first).to_contain_text("done", timeout=30_000)


async def test_a_demo_page_says_how_stoker_answered_it_and_reads_on_a_phone(
        demo: Demo, browser: Browser) -> None:
    async with tab(browser) as page:
        await page.goto(f"{demo.url}/page/3")
        viewport = page.locator('meta[name="viewport"]')
        assert await viewport.get_attribute("content") == "width=device-width, initial-scale=1"
        await expect(page.locator("#answered")).to_contain_text(
            "the demo origin answers at once")  # this fixture's origin: no delay to time
        await page.get_by_role("button", name="Ask Stoker again").click()
        await expect(page.locator("#asked")).to_contain_text("Now: Cache-Status: stoker; hit;")
        await shoot(page, "demo-page")  # no sideways scroll at 1280 px nor at 390 px


async def test_the_time_to_the_first_byte_tells_a_miss_from_a_hit(
        tmp_path: Path, browser: Browser) -> None:
    async with running_demo(tmp_path, delay=0.3) as slow, tab(browser) as page:
        cold = f"{slow.url}/page/2?never-warmed"  # a key of its own: the first view misses
        await page.goto(cold)
        await expect(page.locator("#answered")).to_contain_text(
            "the demo origin takes 300 ms: Stoker asked the origin")
        await page.goto(cold)  # the browser revalidates (max-age=0): Stoker has it now
        await expect(page.locator("#answered")).to_contain_text(
            "faster than the demo origin's 300 ms: Stoker answered it from its cache (a hit)")

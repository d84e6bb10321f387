"""The Warm page in a real browser over a running warmer: start a run with the button and
watch its progress bar and map advance live (no reload) as the origin lets pages through;
start again while one runs (the page says so and offers Replace, which works); cancel a
run through the confirm dialog (Cancel focused); warm a list of URLs with the form.
Screenshot ``warm`` mid-run."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from playwright.async_api import Browser, expect
from tests.integration.browser_harness import (
    SIZES,
    log_in,
    needs_chromium,
    shoot,
)
from tests.integration.warm_site import (
    DEADLINE,
    SITE,
    TOKEN,
    SiteOrigin,
    Warming,
    site_origin,
    warming,
)

pytestmark = needs_chromium

PAGES = 60
TOTAL = PAGES + 1  # the home page too, which the gate does not hold
WARMED = ".warm-map .cell.s-warmed"
PAGE_ONE = '.warm-map .cell[title^="http://www.example.test/page/1 "]'


async def settled(w: Warming, run_id: int, at_least: int) -> None:
    """Wait until run ``run_id`` has settled ``at_least`` URLs (read from its store)."""
    async def poll() -> None:
        while True:
            run = await w.service.stores.runs.get(run_id)
            if run is not None and run.counts.settled >= at_least:
                return
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), DEADLINE)


async def phase(w: Warming, run_id: int) -> str | None:
    run = await w.service.stores.runs.get(run_id)
    return None if run is None else run.phase


async def latest_run(w: Warming) -> int:
    [run] = await w.service.stores.runs.recent(1)
    return run.id


async def test_watch_a_run_advance_live_replace_one_and_cancel_one(tmp_path: Path,
                                                                   browser: Browser) -> None:
    site = SiteOrigin(pages=PAGES, delay=0.05)
    site.gate.clear()  # every page waits until the test lets it through
    async with site_origin(site) as origin_url, warming(origin_url, tmp_path) as w:
        page = await browser.new_page(viewport=SIZES["desktop"])
        try:
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            await log_in(page, w.admin_url, TOKEN)
            await page.goto(f"{w.admin_url}/warm")
            await expect(page.locator("#live")).to_have_text("live", timeout=10_000)
            await page.evaluate("window.stillThisPage = true")  # gone if the page reloads
            flash, bar = page.locator("#flash"), page.locator("#warm-progress")

            await page.get_by_role("button", name="Warm the whole site").click()
            await expect(flash).to_have_text("Warm run started.")
            first = await latest_run(w)
            await expect(page.locator(".warm-map .cell.s-queued")).to_have_count(
                PAGES, timeout=15_000)  # collected: every page queued, the home page warmed
            await expect(page.locator(WARMED)).to_have_count(1)
            await expect(bar).to_have_attribute("max", str(TOTAL))
            await expect(bar).to_have_attribute("value", "1")
            await expect(page.locator(PAGE_ONE)).to_have_attribute(
                "title", "http://www.example.test/page/1 — queued")

            site.gate.set()
            await settled(w, first, 10)
            site.gate.clear()  # held again part way
            await page.locator(f"{WARMED} >> nth=9").wait_for(timeout=10_000)  # 10 or more
            await expect(bar).to_have_attribute("value", re.compile(r"^([1-5]\d|60)$"))
            await expect(page.locator(PAGE_ONE)).to_have_attribute(
                "title", "http://www.example.test/page/1 — warmed")  # the first let through
            await shoot(page, "warm")
            await page.set_viewport_size(SIZES["desktop"])

            await page.get_by_role("button", name="Warm the whole site").click()
            await expect(flash).to_contain_text(f"warm run {first} (manual) is still going")
            await flash.get_by_role("button", name="Replace it").click()
            await expect(page.locator("#confirm")).to_be_visible()
            await expect(page.locator("#confirm-cancel")).to_be_focused()
            await page.locator("#confirm-ok").click()  # "Replace"
            await expect(flash).to_have_text("Warm run started.")
            second = await latest_run(w)
            assert second > first and await phase(w, first) == "cancelled"  # superseded
            await expect(page.locator("#warm-run")).to_contain_text(f"Current run #{second}")

            await page.get_by_role("button", name="Cancel run").click()
            await expect(page.locator("#confirm-question")).to_contain_text(
                f"Cancel warm run #{second}?")
            await expect(page.locator("#confirm-cancel")).to_be_focused()
            await page.locator("#confirm-ok").click()  # "Stop the run"
            await expect(flash).to_have_text(f"Run #{second} cancelled.")
            await expect(page.locator("#warm-run .tag")).to_have_text("cancelled")
            assert await phase(w, second) == "cancelled"

            site.gate.set()  # a last run, let through: the bar fills, the run ends
            await page.get_by_role("button", name="Warm the whole site").click()
            await expect(flash).to_have_text("Warm run started.")
            third = await latest_run(w)
            await expect(page.locator("#warm-run")).to_contain_text(
                f"Latest run #{third}", timeout=20_000)
            await expect(bar).to_have_attribute("value", str(TOTAL))
            await expect(page.locator(WARMED)).to_have_count(TOTAL)
            assert await page.evaluate("window.stillThisPage") is True  # all of it live

            urls = page.get_by_label("URLs to warm (one a line, on this site)")
            await urls.fill(f"{SITE}/page/2\n  {SITE}/page/3\n")
            await page.get_by_role("button", name="Warm these URLs").click()
            await expect(flash).to_have_text("URLs queued.")
            await expect(urls).to_have_value("")  # the form is reset
            fourth = await latest_run(w)
            await expect(page.locator("#warm-run")).to_contain_text(f"run #{fourth} manual, urls")
            await expect(page.locator(".warm-map .cell")).to_have_count(2)
            assert [e for e in errors if "409 (Conflict)" not in e] == []  # the busy start
        finally:
            site.gate.set()  # else the held visits keep the warmer from stopping
            await page.close()  # and its event stream the server

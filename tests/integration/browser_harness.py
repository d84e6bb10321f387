"""What the browser tests share: Debian's Chromium driven by Playwright (never a
downloaded browser), logging in, and screenshots at 1280x800 and on a 390-px phone saved
to ``tests/artifacts/`` (ignored by git), each checked for sideways scrolling.

A test module takes the ``browser`` fixture by importing ``browser_fixture``, and skips itself with
:data:`NEEDS_CHROMIUM` when Chromium is not installed."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}

NEEDS_CHROMIUM = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")


@pytest.fixture(name="browser")
async def browser_fixture() -> AsyncIterator[Browser]:
    """A headless Chromium for one test."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM,
                                                   args=["--no-sandbox"])
        try:
            yield browser
        finally:
            await browser.close()


async def log_in(page: Page, url: str, token: str) -> None:
    """Log in on the admin listener at ``url`` with ``token``; the page ends on ``/``."""
    await page.goto(f"{url}/")
    await page.wait_for_url("**/login")
    await page.get_by_label("Admin token").fill(token)
    await page.get_by_role("button", name="Log in").click()
    await page.wait_for_url(f"{url}/")


async def shoot(page: Page, name: str) -> None:
    """Screenshots of the page at each of :data:`SIZES`; fails if it scrolls sideways."""
    ARTIFACTS.mkdir(exist_ok=True)
    for size, viewport in SIZES.items():
        await page.set_viewport_size(viewport)
        await page.screenshot(path=str(ARTIFACTS / f"dashboard-{name}-{size}.png"),
                              full_page=True)
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= viewport["width"], f"{name} scrolls sideways at {size}: {width}px"

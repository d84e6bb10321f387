"""The dashboard's browser tests' common parts: Debian's Chromium driven by Playwright
(never a downloaded browser), logging in, and screenshots at 1280x800 and on a 390-px
phone saved to ``tests/artifacts/`` (ignored by git), each checked for sideways scroll."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """Debian's Chromium, launched for one test (the ``browser`` fixture)."""
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM,
                                                    args=["--no-sandbox"])
        try:
            yield launched
        finally:
            await launched.close()


@asynccontextmanager
async def tab(browser: Browser) -> AsyncIterator[Page]:
    """A page in a context of its own, closed at the end of the block (before the server
    it talks to stops: an open event stream would hold that server's shutdown)."""
    context = await browser.new_context(viewport=SIZES["desktop"])
    try:
        yield await context.new_page()
    finally:
        await context.close()


async def log_in(page: Page, url: str, token: str) -> None:
    """Open the dashboard at ``url``, be sent to the login page, log in with ``token``."""
    await page.goto(f"{url}/")
    await page.wait_for_url("**/login")
    await page.get_by_label("Admin token").fill(token)
    await page.get_by_role("button", name="Log in").click()
    await page.wait_for_url(f"{url}/")


def console_errors(page: Page) -> list[str]:
    """The page's console errors from now on (a CSP violation is one)."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return errors


async def shoot(page: Page, name: str, pattern: str = "dashboard-{name}-{size}.png") -> None:
    """Screenshots of ``page`` at every size, named by ``pattern`` (``{name}``, ``{size}``,
    ``{width}``); none may scroll sideways."""
    ARTIFACTS.mkdir(exist_ok=True)
    for size, viewport in SIZES.items():
        await page.set_viewport_size(viewport)
        shot = pattern.format(name=name, size=size, width=viewport["width"])
        await page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= viewport["width"], f"{name} scrolls sideways at {size}: {width}px"
    await page.set_viewport_size(SIZES["desktop"])

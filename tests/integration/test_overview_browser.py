"""The overview in a real browser (Debian's Chromium, driven by Playwright; never a
downloaded browser), in its three states: **empty** (a fresh start: words, not blank
charts), **busy** (hits, misses, uncacheable requests and warm visits: the hit ratio shown
is ``/api/status``'s) and **origin down** (the origin stopped: the banner says so).  Each
state is shot at 1280 and 390 px to ``tests/artifacts/overview-<state>-<width>.png``; none
scrolls sideways, none logs a console error."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from playwright.async_api import Browser, Page, expect
from tests.conftest import free_port, serving
from tests.integration.admin_harness import CACHEABLE, TOKEN
from tests.integration.browser_harness import SIZES, console_errors, log_in, needs_chromium, shoot
from tests.integration.dashboard_harness import Dashboard, dashboard
from tests.integration.origin import ScriptedOrigin

from stoker.adapters.visit import PipelineVisitor

pytestmark = needs_chromium

SHOTS = "overview-{name}-{width}.png"
LIVE = 10_000


@asynccontextmanager
async def overview(dash: Dashboard, browser: Browser) -> AsyncIterator[tuple[Page, list[str]]]:
    """A logged-in tab on the overview, live, and its console errors."""
    page = await browser.new_page(viewport=SIZES["desktop"])
    errors = console_errors(page)
    try:
        await log_in(page, dash.url, TOKEN)
        await expect(page.locator("#live")).to_have_text("live", timeout=LIVE)
        yield page, errors
    finally:
        await page.close()


@asynccontextmanager
async def listening_dashboard(origin_url: str, data_dir: Path) -> AsyncIterator[Dashboard]:
    """The dashboard of a proxy whose ``listen`` is where it really listens (the empty
    state names it), its status hub sampling from the start (as ``stoker serve`` runs it)."""
    port = free_port()
    async with dashboard(origin_url, data_dir, port=port,
                         listen=f"127.0.0.1:{port}", hub={"debounce": 0.05}) as dash:
        dash.side.hub.start()
        yield dash


async def test_empty_says_where_to_send_a_request(tmp_path: Path, browser: Browser) -> None:
    async with serving(ScriptedOrigin(), kind="uvicorn") as origin_url, \
            listening_dashboard(origin_url, tmp_path / "d") as dash, \
            overview(dash, browser) as (page, errors):
        note = page.locator("#empty-note")
        await expect(note).to_be_visible()
        await expect(note).to_contain_text(f"No requests yet — send one to {dash.proxy.url}")
        await expect(page.locator('[data-path="hit_ratio"]')).to_have_text("—")
        await expect(page.locator('[data-chart="requests"]')).to_contain_text(
            "No requests in the last hour")
        await expect(page.locator("#origin-banner")).to_be_hidden()
        text = await page.locator("main").inner_text()
        assert "NaN" not in text and "undefined" not in text
        await shoot(page, "empty", SHOTS)
        assert errors == []


async def test_busy_shows_the_hit_ratio_of_api_status(tmp_path: Path, browser: Browser) -> None:
    app = ScriptedOrigin()
    for page_no in range(4):
        app.set(f"/p{page_no}", headers=CACHEABLE, body=b"x" * 20_000)
    app.set("/private", headers=[("cache-control", "no-store")], body=b"mine")
    async with serving(app, kind="uvicorn") as origin_url, \
            listening_dashboard(origin_url, tmp_path / "d") as dash:
        visitor = PipelineVisitor(dash.proxy.stoker.pipeline, dash.proxy.stoker.clock,
                                  stopgap_header=b"x-stoker-stopgap")
        await visitor.visit(f"{dash.proxy.url}/p3", (), allowance=1)  # a warm visit
        for _ in range(5):
            for page_no in range(3):
                await dash.proxy.client.get(f"/p{page_no}")  # a miss, then hits
            await dash.proxy.client.get("/private")  # uncacheable
            await dash.proxy.client.get("/p3")  # warmed: a hit
        status = (await dash.client.get("/api/status", headers=dash.bearer)).json()
        assert status["served_by"]["warm"] == 1 and status["uncacheable"] == {
            "pass: no-store": 5}
        async with overview(dash, browser) as (page, errors):
            shown = f"{status['hit_ratio'] * 100:.1f} %"
            assert shown == "68.0 %"  # 17 of 25: 3 misses, 5 passes; the warm visit apart
            await expect(page.locator('[data-path="hit_ratio"]')).to_have_text(shown)
            await expect(page.locator('[data-path="served_by.warm"]')).to_have_text("1")
            await expect(page.locator('[data-list="uncacheable"]')).to_contain_text(
                "pass: no-store")
            await expect(page.locator("#empty-note")).to_be_hidden()
            await expect(page.locator('[data-chart="requests"] rect').first).to_be_attached()
            await expect(page.locator('[data-table="nodes"]')).to_contain_text("(this one)")
            await expect(page.locator('[data-table="nodes"]')).to_contain_text(shown)
            await page.get_by_role("button", name="5 min").click()
            await expect(page.locator('[data-chart="requests"] text.tick').first).to_be_attached()
            await page.reload()  # the window chosen survives a reload
            await expect(page.locator('button[data-window="5m"]')).to_have_attribute(
                "aria-pressed", "true", timeout=LIVE)
            await shoot(page, "busy", SHOTS)
            assert errors == []


async def test_origin_down_shows_the_banner(tmp_path: Path, browser: Browser) -> None:
    app = ScriptedOrigin()
    app.set("/kept", headers=[("cache-control", "max-age=1")], body=b"kept")
    origin = serving(app, kind="uvicorn")
    origin_url = await origin.__aenter__()
    try:
        async with listening_dashboard(origin_url, tmp_path / "d") as dash:
            await dash.proxy.client.get("/kept")
            await origin.__aexit__(None, None, None)  # the origin stops
            origin = None
            async with overview(dash, browser) as (page, errors):
                await page.wait_for_timeout(1_100)  # /kept goes stale
                answers = [(await dash.proxy.client.get(path)).status_code
                           for path in ("/gone", "/kept") * 4]
                assert 502 in answers or 503 in answers
                banner = page.locator("#origin-banner")
                await expect(banner).to_be_visible(timeout=LIVE)
                await expect(banner).to_contain_text("The origin is down")
                await expect(banner).to_contain_text("stale copies")
                failures = page.locator('[data-path="served_by.origin_failure"]')
                await expect(failures).not_to_have_text("0")
                await expect(page.locator('[data-path="served_by.error"]')).to_have_text("0")
                await shoot(page, "origin-down", SHOTS)
                assert errors == []
    finally:
        if origin is not None:
            await origin.__aexit__(None, None, None)

"""The Cache, Audit and Credentials pages in a real browser: look a URL up, mark it stale,
purge its tag through the confirm dialog (Cancel focused), find the purge on the Audit page;
set a warm credential and see only its fingerprint, on its page and in the audit log.
Screenshots of each page, with data on it."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, Page, expect
from tests.integration.admin_harness import CACHEABLE, TOKEN
from tests.integration.browser_harness import (
    SIZES,
    console_errors,
    log_in,
    needs_chromium,
    shoot,
    tab,
)
from tests.integration.conftest import Origin
from tests.integration.dashboard_harness import dashboard
from tests.integration.warm_site import TOKEN as WARM_TOKEN
from tests.integration.warm_site import SiteOrigin, site_origin, warming

pytestmark = needs_chromium

SECRET = "let-me-in-7f3a"


async def confirm(page: Page, question: str) -> None:
    """Answer the confirm dialog, checking it asks ``question`` with Cancel focused."""
    dialog = page.locator("#confirm")
    await expect(dialog).to_be_visible()
    await expect(page.locator("#confirm-cancel")).to_be_focused()
    await expect(page.locator("#confirm-question")).to_contain_text(question)
    await page.locator("#confirm-ok").click()


async def test_look_up_purge_a_tag_and_find_it_in_the_audit(origin: Origin, tmp_path: Path,
                                                             browser: Browser) -> None:
    origin.app.set("/p", headers=[*CACHEABLE, ("surrogate-key", "product-42 sale")],
                   body=b"<p>product</p>" * 200)
    async with dashboard(origin.url, tmp_path / "d", node_id="node-a") as dash, \
            tab(browser) as page:
        await dash.proxy.client.get("/p")
        errors = console_errors(page)
        await log_in(page, dash.url, TOKEN)
        await page.goto(f"{dash.url}/cache")
        await page.get_by_label("Look up a URL").fill(f"{dash.proxy.client.base_url}/p")
        await page.get_by_role("button", name="Look up").click()
        variant = page.locator("article.variant")
        await expect(variant).to_contain_text("product-42")
        await expect(variant).to_contain_text("L1 of node-a + L2, shared by every node")
        await expect(variant.locator(".tag.ok")).to_have_text("fresh")
        await expect(page.locator("#live")).to_have_text("live", timeout=10_000)
        await shoot(page, "cache")
        await page.set_viewport_size(SIZES["desktop"])
        await page.get_by_role("button", name="Soft purge").click()
        await confirm(page, "stale? It is served while it revalidates.")
        await expect(page.locator("#flash")).to_have_text("Entries marked stale: 1.")
        await expect(variant.locator("h3 .tag")).not_to_have_text("fresh")
        await page.get_by_role("textbox", name="Tags").fill("product-42")
        await page.get_by_role("button", name="Purge…").click()
        await confirm(page, "Purge these? Tags: product-42.")
        await expect(page.locator("#flash")).to_have_text("Entries purged: 1.")
        await expect(page.locator(".lookup")).to_contain_text("Not in the cache")
        await expect(page.get_by_role("textbox", name="Tags")).to_have_value("")
        await dash.client.post("/api/purge", json={"all": True})  # no token: refused
        await page.goto(f"{dash.url}/audit")
        await expect(page.locator("tbody tr", has_text="status: 401").locator(".tag.failed")
                     ).to_have_text("denied")
        row = page.locator("tbody tr", has_text="tags: product-42")
        await expect(row).to_contain_text("session")
        await expect(row.locator(".tag.ok")).to_have_text("ok")
        await expect(page.locator("tbody tr", has_text="login").first).to_be_visible()
        await shoot(page, "audit")
        await page.set_viewport_size(SIZES["desktop"])
        await page.get_by_label("Action").select_option("login")
        await page.get_by_role("button", name="Filter").click()
        await expect(page.locator("tbody")).not_to_contain_text("product-42")
        await page.get_by_label("Action").select_option("purge")
        await page.get_by_role("button", name="Filter").click()
        await page.wait_for_url("**/audit?action=purge**")
        await expect(row).to_be_visible()
        assert errors == []


async def test_set_a_warm_credential_and_see_only_its_fingerprint(tmp_path: Path,
                                                                  browser: Browser) -> None:
    allowed = ["header:x-bypass", "cookie:age_ok"]
    async with site_origin(SiteOrigin(pages=1)) as url, \
            warming(url, tmp_path, warm_credentials=allowed) as warm, tab(browser) as page:
        await log_in(page, warm.admin_url, WARM_TOKEN)
        await page.goto(f"{warm.admin_url}/credentials")
        value = page.get_by_label("header x-bypass")
        await value.fill(SECRET)
        await page.locator("form", has=value).get_by_role("button", name="Save").click()
        await expect(page.locator("#flash")).to_contain_text("Saved header:x-bypass: sha256:")
        mark = (await page.locator("#flash").text_content() or "").rsplit(" ", 1)[1][:-1]
        row = page.locator("tbody tr", has_text="x-bypass")
        await expect(row).to_contain_text(mark)
        await expect(page.locator("tbody tr", has_text="age_ok")).to_contain_text("not set")
        await expect(value).to_have_value("")
        assert SECRET not in await page.content()
        await shoot(page, "credentials")
        await page.set_viewport_size(SIZES["desktop"])
        await page.goto(f"{warm.admin_url}/audit?action=warm-credential")
        await expect(page.locator("tbody")).to_contain_text(mark)
        assert SECRET not in await page.content()
        await page.goto(f"{warm.admin_url}/credentials")
        await row.get_by_role("button", name="Remove").click()
        await confirm(page, "Remove the warm credential header:x-bypass?")
        await expect(page.locator("#flash")).to_have_text("Removed header:x-bypass.")
        await expect(row).to_contain_text("not set")

"""The Jobs page in a real browser over a running warmer: requeue a dead job through the
confirm dialog (Cancel focused; Cancel requeues nothing, Confirm does: the job leaves the
dead list, in the page and the API, and the audit has a ``requeue`` row); "Requeue all"
stays disabled until the exact count is typed; a job that dies meanwhile shows up live.
Screenshot ``jobs`` with dead jobs."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, expect
from tests.integration.browser_harness import (
    SIZES,
    log_in,
    needs_chromium,
    shoot,
)
from tests.integration.test_jobs_api import QUEUE, bury
from tests.integration.warm_site import SITE, TOKEN, SiteOrigin, Warming, site_origin, warming

from stoker.jobs.model import NewJob
from stoker.warm.warmer import RUN_FIELD

pytestmark = needs_chromium


def visit(n: int) -> NewJob:
    url = f"{SITE}/a/rather/long/path/that/must/wrap/on/a/phone/page/{n}?utm_source=x"
    return NewJob(QUEUE, {"kind": "visit", RUN_FIELD: 7, "url": url}, f"warm:7:0:{url}",
                  max_attempts=1)


async def dead(w: Warming) -> list[int]:
    """The ids of the dead jobs, as the API lists them."""
    listed = (await w.admin.get("/api/jobs")).json()["dead"]
    assert listed["total"] == len(listed["jobs"])
    return [job["id"] for job in listed["jobs"]]


async def test_requeue_a_dead_job_through_the_dialog_and_all_with_the_count(
        tmp_path: Path, browser: Browser) -> None:
    async with site_origin(SiteOrigin(1)) as origin_url, warming(origin_url, tmp_path) as w:
        await bury(w, [visit(n) for n in range(3)])
        await w.service.stores.queue.enqueue([NewJob(QUEUE, {"kind": "chore"}, "live")])
        await w.service.stores.queue.lease(QUEUE, 1, "node-a:4242", 300)
        before = await dead(w)
        page = await browser.new_page(viewport=SIZES["desktop"])
        try:
            await log_in(page, w.admin_url, TOKEN)
            await page.goto(f"{w.admin_url}/jobs")
            await expect(page.locator("#live")).to_have_text("live", timeout=10_000)
            await page.evaluate("window.stillThisPage = true")  # gone if the page reloads
            rows = page.get_by_role("table", name="Dead jobs").locator("tbody tr")
            await expect(rows).to_have_count(3)
            await expect(page.get_by_role("table", name="Running jobs")).to_contain_text(
                "node-a:4242")
            await shoot(page, "jobs")
            await page.set_viewport_size(SIZES["desktop"])

            target = before[0]
            row = rows.filter(has_text=f"#{target}")
            dialog, ok = page.locator("#confirm"), page.locator("#confirm-ok")
            await row.get_by_role("button", name="Requeue", exact=True).click()
            await expect(dialog).to_be_visible()
            await expect(page.locator("#confirm-question")).to_have_text(
                f"Requeue dead job #{target}?")
            await expect(page.locator("#confirm-cancel")).to_be_focused()
            await page.locator("#confirm-cancel").click()
            await expect(dialog).to_be_hidden()
            assert await dead(w) == before  # Cancel requeued nothing
            await expect(rows).to_have_count(3)

            await row.get_by_role("button", name="Requeue", exact=True).click()
            await expect(page.locator("#confirm-cancel")).to_be_focused()
            await ok.click()
            await expect(page.locator("#flash")).to_have_text(f"Job #{target} requeued.")
            await expect(rows).to_have_count(2)
            await expect(rows.filter(has_text=f"#{target}")).to_have_count(0)
            assert await dead(w) == before[1:]
            job = await w.service.stores.queue.get(target)
            assert job is not None and job.state == "pending"
            audit = (await w.admin.get("/api/audit")).json()["records"]
            assert [(r["target"]["ids"], r["outcome"]) for r in audit
                    if r["action"] == "requeue"] == [([target], "ok")]

            await page.get_by_role("button", name="Requeue all 2 dead jobs").click()
            await expect(page.locator("#confirm-cancel")).to_be_focused()
            await expect(ok).to_be_disabled()
            await page.locator("#confirm-input").fill("1")
            await expect(ok).to_be_disabled()  # not the count
            await page.locator("#confirm-input").fill("2")
            await expect(ok).to_be_enabled()
            await ok.click()
            await expect(page.locator("#flash")).to_have_text("Every dead job requeued.")
            await expect(page.get_by_role("table", name="Dead jobs")).to_contain_text(
                "no dead job")
            assert await dead(w) == []

            await bury(w, [visit(9)])  # a job dies meanwhile: the page shows it, no reload
            await expect(rows).to_have_count(1, timeout=10_000)
            assert await page.evaluate("window.stillThisPage") is True
        finally:
            await page.close()

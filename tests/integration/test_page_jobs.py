"""The Jobs page over a running warmer: counts by queue and state, the running job with its
owner and lease, the dead jobs with their last error and requeue buttons, paged 50 at a
time; /login without a login; ``X-Stoker-Part`` gives the content alone; the status (and
so the event stream that refreshes the page) carries the queue's counts."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import httpx
from tests.integration.test_jobs_api import QUEUE, bury
from tests.integration.test_page_warm import session_of
from tests.integration.warm_site import SiteOrigin, site_origin, warming

from stoker.jobs.model import NewJob
from stoker.warm.warmer import RUN_FIELD


def bodies(text: str) -> list[object]:
    return [json.loads(html.unescape(raw)) for raw in re.findall(r'data-body="([^"]*)"', text)]


async def test_the_jobs_page_shows_counts_running_and_dead_jobs(tmp_path: Path) -> None:
    async with site_origin(SiteOrigin(1)) as origin_url, \
            warming(origin_url, tmp_path) as w, \
            httpx.AsyncClient(base_url=w.admin_url, timeout=30) as anonymous:
        await bury(w, [NewJob(QUEUE, {RUN_FIELD: 3, "url": "/<script>"}, "k<b>",
                              max_attempts=1)])
        await w.service.stores.queue.enqueue([NewJob(QUEUE, {}, "live")])
        await w.service.stores.queue.lease(QUEUE, 1, "owner-a", 60)
        session = await session_of(anonymous, w.admin_url)
        page = await anonymous.get("/jobs", headers=session)
        part = await anonymous.get("/jobs", headers={**session, "x-stoker-part": "1"})
        anonymous.cookies.clear()
        refused = await anonymous.get("/jobs")
        dead_id = (await w.admin.get("/api/jobs")).json()["dead"]["jobs"][0]["id"]
        status = (await w.admin.get("/api/status")).json()["warm"]["jobs"]
    assert page.status_code == 200 and 'aria-current="page">Jobs</a>' in page.text
    text = part.text
    assert "<html" not in text and text.startswith("<h1>Jobs")
    assert f'<td data-label="Queue"><strong>{QUEUE}</strong></td>' in text
    assert "owner-a" in text and re.search(r"in (5\d s|60 s|1 min)</time>", text)  # 60 s lease
    assert "boom k&lt;b&gt;" in text and "<script>" not in text
    assert bodies(text) == [{"all": True, "count": 1}, {"id": dead_id}, {"key": "k<b>"},
                            {"run": 3}]
    assert 'data-typed="1"' in text and "Requeue all 1 dead jobs" in text
    assert refused.status_code == 303 and refused.headers["location"] == "/login"
    # the status carries the counts, so a job that dies is a change: the page refreshes
    assert {"queue": QUEUE, "state": "dead", "count": 1} in status


async def test_dead_jobs_are_paged_fifty_at_a_time(tmp_path: Path) -> None:
    async with site_origin(SiteOrigin(1)) as origin_url, warming(origin_url, tmp_path) as w:
        await bury(w, [NewJob(QUEUE, {}, f"k{n}", max_attempts=1) for n in range(51)])
        first = (await w.admin.get("/jobs")).text
        second = (await w.admin.get("/jobs", params={"offset": "50"})).text
        nonsense = (await w.admin.get("/jobs", params={"offset": "-3"})).text
    assert first.count('data-body="{&quot;id&quot;') == 50
    assert 'href="/jobs?offset=50" rel="next"' in first and "1 to 50 of 51" in first
    assert second.count('data-body="{&quot;id&quot;') == 1
    assert 'href="/jobs?offset=0" rel="prev"' in second and "51 to 51 of 51" in second
    assert "1 to 50 of 51" in nonsense  # not a number: the first page

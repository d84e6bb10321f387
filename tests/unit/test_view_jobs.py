"""The Jobs page's pure renderers: counts by queue and state, running jobs, dead jobs with
their requeue buttons (one, by key, by run, all with the count typed), the pager; hostile
values escaped."""

from __future__ import annotations

import html as stdhtml
import json
import re
from typing import Any

from stoker.admin.views.jobs import (
    counts_html,
    dead_html,
    jobs_html,
    pager,
    requeues,
    running_html,
)

NOW = 1_700_000_000.0
EVIL = "<script>alert(1)</script>"


def job(ident: int = 4, **given: Any) -> dict[str, Any]:
    return {"id": ident, "queue": "warm", "key": None, "payload": {}, "state": "dead",
            "attempts": 5, "max_attempts": 5, "owner": None, "lease_until": None,
            "last_error": "boom", "run_at": NOW, "created_at": NOW - 600,
            "updated_at": NOW - 120, **given}


def bodies(html: str) -> list[Any]:
    """The JSON bodies of the action buttons in ``html``."""
    return [json.loads(stdhtml.unescape(raw)) for raw in re.findall(r'data-body="([^"]*)"', html)]


def test_counts_are_a_row_per_queue_and_a_column_per_state() -> None:
    html = counts_html([{"queue": "warm", "state": "dead", "count": 3},
                        {"queue": "warm", "state": "pending", "count": 1200},
                        {"queue": EVIL, "state": "done", "count": 1}])
    assert "<th>Queue</th><th class=\"num\">pending</th>" in html
    assert ('<td data-label="Queue"><strong>warm</strong></td>'
            '<td class="num" data-label="pending">1 200</td>'
            '<td class="num" data-label="running">0</td><td class="num" data-label="done">0</td>'
            '<td class="num" data-label="dead">3</td>') in html
    assert 'class="data stack"' in html  # one card per queue on a phone
    assert "&lt;script&gt;" in html and EVIL not in html
    assert "the queue is empty" in counts_html([])


def test_running_jobs_show_owner_lease_end_and_attempts() -> None:
    html = running_html([job(state="running", owner="node-a:123", lease_until=NOW + 30,
                             attempts=2)], NOW)
    assert "node-a:123" in html and "in 30 s" in html and "2 / 5" in html
    assert "no job is running" in running_html([], NOW)


def test_a_dead_job_offers_requeue_by_id_key_and_run() -> None:
    html = requeues(job(key="warm:7:0:http://s/a", payload={"run": 7, "url": "http://s/a"}))
    assert bodies(html) == [{"id": 4}, {"key": "warm:7:0:http://s/a"}, {"run": 7}]
    assert html.count("data-confirm=") == 3
    assert bodies(requeues(job())) == [{"id": 4}]  # no key, no run: only itself
    assert bodies(requeues(job(payload={"run": "7"}))) == [{"id": 4}]  # not a run id


def test_dead_jobs_show_the_last_error_escaped_and_requeue_all_needs_the_count() -> None:
    html = dead_html({"total": 12, "offset": 0, "limit": 50,
                      "jobs": [job(last_error=EVIL, key=EVIL, payload={"url": EVIL})]}, NOW)
    assert EVIL not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Requeue all 12 dead jobs" in html and 'data-typed="12"' in html
    assert {"all": True, "count": 12} in bodies(html)
    assert "2 min ago" in html and "5 / 5" in html


def test_no_dead_job_no_requeue_all() -> None:
    html = dead_html({"total": 0, "offset": 0, "limit": 50, "jobs": []}, NOW)
    assert "no dead job" in html and "Requeue all" not in html and "pager" not in html


def test_the_pager_links_prev_and_next_by_offset() -> None:
    first, middle, last = pager(120, 0), pager(120, 50), pager(120, 100)
    assert 'href="/jobs?offset=50" rel="next"' in first and "prev" not in first
    assert "1 to 50 of 120" in first
    assert 'href="/jobs?offset=0" rel="prev"' in middle and 'offset=100" rel="next"' in middle
    assert "101 to 120 of 120" in last and "next" not in last
    assert pager(10, 0) == ""
    assert 'rel="prev"' in pager(0, 50)  # past the end (the jobs were requeued): a way back


def test_the_page_keeps_everything_that_changes_in_its_live_region() -> None:
    html = jobs_html({"counts": [], "running": [], "dead": {"total": 0, "offset": 0,
                                                            "limit": 50, "jobs": []}}, NOW)
    assert html.index('id="live"') < html.index("<div data-live>") < html.index("Running")
    assert html.endswith("</div>")

"""The Jobs page: the queue's counts by queue and state, the running jobs with their owner
and lease, the dead jobs with their last error (paged), and requeueing them: one, by key,
by warm run, or all (the count typed to confirm).

Invariants: every figure comes from :func:`~stoker.admin.jobs_api.jobs_overview`, as
``GET /api/jobs`` answers; every requeue goes through ``POST /api/jobs/requeue`` behind
a confirm dialog (Cancel focused), "all" only once the user typed the count shown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from starlette.requests import Request

from stoker.admin.jobs_api import jobs_overview
from stoker.admin.views import Sources, View
from stoker.admin.views.html import (
    Cell,
    Markup,
    action,
    esc,
    heading,
    moment,
    no_warmer,
    shown,
    table,
    url_attr,
)
from stoker.jobs.model import JOB_STATES
from stoker.warm.warmer import RUN_FIELD

PAGE: Final = 50
"""Dead jobs a page shows."""
REQUEUE: Final = "/api/jobs/requeue"


def counts_html(counts: Sequence[Mapping[str, Any]]) -> Markup:
    """The counts as a table: a row per queue, a column per state.  Pure."""
    by_queue: dict[str, dict[str, int]] = {}
    for row in counts:
        by_queue.setdefault(row["queue"], {})[row["state"]] = row["count"]
    rows = [(Markup(f"<strong>{esc(queue)}</strong>"),
             *(shown(states.get(state, 0), "count") for state in JOB_STATES))
            for queue, states in sorted(by_queue.items())]
    return table(("Queue", *JOB_STATES), rows, empty="the queue is empty",
                 numeric=range(1, len(JOB_STATES) + 1), label="Jobs by queue and state")


def what(job: Mapping[str, Any]) -> Markup:
    """A job's payload, compact (its key is in the "By key" confirmation).  Pure."""
    payload = json.dumps(job["payload"], separators=(", ", ": "), sort_keys=True)
    return Markup(f'<code class="detail wide">{esc(payload)}</code>')


def ident(job: Mapping[str, Any]) -> Markup:
    """A job's id, its queue under it.  Pure."""
    return Markup(f'#{esc(job["id"])}<br><span class="detail queue">{esc(job["queue"])}</span>')


def tries(job: Mapping[str, Any]) -> str:
    """``attempts / max_attempts``.  Pure."""
    return f"{job['attempts']} / {job['max_attempts']}"


def running_html(jobs: Sequence[Mapping[str, Any]], now: float) -> Markup:
    """The running jobs: owner, lease end, attempts.  Pure."""
    rows = [(ident(job), what(job), job["owner"] or "—", moment(job["lease_until"], now),
             tries(job)) for job in jobs]
    return table(("Job", "What", "Owner", "Lease ends", "Attempts"), rows,
                 empty="no job is running", numeric=(4,), label="Running jobs")


def requeues(job: Mapping[str, Any]) -> Markup:
    """A dead job's requeue buttons: it, its key's jobs, its warm run's jobs.  Pure."""
    number = job["id"]
    buttons = [action("Requeue", REQUEUE, body={"id": number}, confirm_label="Requeue",
                      confirm=f"Requeue dead job #{number}?", done=f"Job #{number} requeued.")]
    if job["key"]:
        buttons.append(action("By key", REQUEUE, body={"key": job["key"]},
                              confirm=f"Requeue every dead job with key {job['key']}?",
                              confirm_label="Requeue", done="Requeued by key."))
    run = job["payload"].get(RUN_FIELD)
    if isinstance(run, int) and not isinstance(run, bool):
        buttons.append(action(f"Run #{run}", REQUEUE, body={"run": run},
                              confirm=f"Requeue every dead job of warm run #{run}?",
                              confirm_label="Requeue", done=f"Run #{run}'s jobs requeued."))
    return Markup('<div class="buttons">' + "".join(buttons) + "</div>")


def pager(total: int, offset: int, limit: int = PAGE) -> Markup:
    """Prev/Next links over the dead jobs, and where this page is.  Pure."""
    if total <= limit and offset == 0:
        return Markup("")
    links = []
    if offset > 0:
        links.append(f'<a {url_attr("href", f"/jobs?offset={max(0, offset - limit)}")} '
                     'rel="prev">Prev</a>')
    last = min(offset + limit, total)
    links.append(f"<span>{shown(offset + 1 if total else 0, 'count')} to {shown(last, 'count')} "
                 f"of {shown(total, 'count')}</span>")
    if offset + limit < total:
        links.append(f'<a {url_attr("href", f"/jobs?offset={offset + limit}")} rel="next">Next</a>')
    return Markup('<nav class="pager" aria-label="Dead jobs pages">' + "".join(links) + "</nav>")


def dead_html(dead: Mapping[str, Any], now: float) -> Markup:
    """The dead jobs' section: requeue all, the page of jobs, the pager.  Pure."""
    total = dead["total"]
    every = action(f"Requeue all {shown(total, 'count')} dead jobs", REQUEUE, danger=True,
                   body={"all": True, "count": total}, typed=str(total),
                   confirm=f"Requeue all {total} dead jobs?", confirm_label="Requeue all",
                   done="Every dead job requeued.") if total else ""
    rows: list[Sequence[Cell]] = [
        (ident(job), what(job), tries(job),
         Markup(f'<span class="detail wide">{esc(job["last_error"] or "—")}</span>'),
         moment(job["updated_at"], now), requeues(job)) for job in dead["jobs"]]
    return Markup(f'<h2>Dead jobs <span class="detail">{shown(total, "count")}</span> '
                  f"{every}</h2>"
                  + table(("Job", "What", "Attempts", "Last error", "Died", ""), rows,
                          empty="no dead job", numeric=(2,), label="Dead jobs")
                  + pager(total, dead["offset"], dead["limit"]))


def jobs_html(overview: Mapping[str, Any], now: float) -> str:
    """The page's content, from :func:`~stoker.admin.jobs_api.jobs_overview`.  Pure."""
    return (heading("Jobs") + '<p class="lead">The job queue the warmer works from: a '
            "job that runs out of attempts is dead until it is requeued.</p><div data-live>"
            + counts_html(overview["counts"]) + "<h2>Running</h2>"
            + running_html(overview["running"], now) + dead_html(overview["dead"], now)
            + "</div>")


def offset_of(request: Request) -> int:
    """The page's ``?offset=`` (0 when absent or not a number)."""
    raw = request.query_params.get("offset", "")
    return int(raw) if raw.isdigit() else 0


async def content(request: Request, sources: Sources) -> str:
    """The Jobs page for the running process."""
    if sources.warm is None:
        return "<h1>Jobs</h1>" + no_warmer()
    overview = await jobs_overview(sources.warm.stores.queue, PAGE, offset_of(request))
    return jobs_html(overview, sources.stoker.clock.now())


VIEW: Final = View("Jobs", "/jobs", content)

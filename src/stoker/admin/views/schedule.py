"""The Schedule page: every persisted deadline, when it is next due, how its last run
ended, and who holds it while it runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from starlette.requests import Request

from stoker.admin.views import Sources, View
from stoker.admin.views.html import Markup, esc, heading, moment, no_warmer, table
from stoker.admin.warm_api import deadline_json

PURPOSES: Final[Mapping[str, str]] = {
    "rewarm": "Re-warm what purges and edits made cold",
    "refresh": "Daily refresh of the whole site",
    "recover": "Warm again what failed while the origin was down",
    "stats_flush": "Write the hit statistics to the store",
    "job_reap": "Delete finished jobs past their keep time",
    "l2_reclaim": "Evict L2 entries past their keep time or over the size limit",
    "audit_prune": "Delete audit records beyond audit_max_age or audit_max_rows",
}
"""What each deadline is for, as the page says it."""


def outcome(deadline: Mapping[str, Any], now: float) -> Markup:
    """How a deadline's last run went, and whether one is running.  Pure."""
    if deadline["claimed_until"] is not None and deadline["claimed_until"] > now:
        return Markup(f'<span class="tag running">running on {esc(deadline["owner"])}</span>')
    if deadline["last_error"]:
        tries = deadline["attempts"]
        return Markup(f'<span class="tag failed">failed ({esc(tries)} '
                      f'{"try" if tries == 1 else "tries"})</span> '
                      f'<span class="detail">{esc(deadline["last_error"])}</span>')
    if deadline["completed_at"] is None:
        return Markup('<span class="tag">not run yet</span>')
    return Markup('<span class="tag ok">ok</span>')


def schedule_html(deadlines: Sequence[Mapping[str, Any]], now: float) -> str:
    """The page's content, from :func:`~stoker.admin.warm_api.deadline_json` rows.  Pure."""
    rows = [(Markup(f"<strong>{esc(PURPOSES.get(d['name'], d['name']))}</strong>"
                    f'<br><code class="detail">{esc(d["name"])}</code>'),
             moment(d["due_at"], now) if d["due_at"] is not None else "not armed",
             moment(d["completed_at"], now), outcome(d, now)) for d in deadlines]
    return (heading("Schedule") + '<p class="lead">Every deadline Stoker keeps in the '
            "database: one timer wakes for the earliest, whichever process holds it runs it, "
            "and a restart loses none.</p><div data-live>"
            + table(("Deadline", "Next due", "Last run ended", "Last outcome"), rows,
                    empty="no deadlines", label="Deadlines") + "</div>")


async def content(_: Request, sources: Sources) -> str:
    """The Schedule page for the running process."""
    if sources.warm is None:
        return heading("Schedule", live=False) + no_warmer()
    deadlines = [deadline_json(d) for d in await sources.warm.ticker.status()]
    return schedule_html(deadlines, sources.stoker.clock.now())


VIEW: Final = View("Schedule", "/schedule", content)

"""The Audit page: every change and refused call, newest first (who, what, on what, how
many, how it ended), filtered by action and paged to older records, read through the
store call ``GET /api/audit`` makes (``stoker.audit.recent``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlencode

from starlette.requests import Request

from stoker.admin.views import Sources, View
from stoker.admin.views.html import Markup, esc, heading, moment, shown, table, url_attr

PAGE: Final = 50
"""Records a page shows."""
ACTIONS: Final = ("purge", "warm", "warm-cancel", "warm-credential", "requeue", "login",
                  "logout", "refused calls")
"""The actions Stoker records by name (a call the guard refused is recorded as
``METHOD /path``: the filter's free text finds those)."""
TONES: Final[Mapping[str, str]] = {
    "ok": "ok", "joined": "ok", "denied": "failed", "invalid": "failed", "error": "failed",
    "busy": "running", "ended": "running", "suppressed": "running"}
"""Each outcome's tag class (an outcome not named here is shown plain)."""


def actor_html(actor: str) -> Markup:
    """Who acted: its kind (``token``, ``session``, ``client``...) and its mark.  Pure."""
    kind, _, mark = str(actor).partition(":")
    if not mark:
        return esc(actor)
    return Markup(f'{esc(kind)} <code class="detail">{esc(mark)}</code>')


def said(value: Any) -> str:
    """One target value as text: a list joined, JSON for anything nested.  Pure."""
    if isinstance(value, list) and all(isinstance(item, str | int | float) for item in value):
        return ", ".join(map(str, value))
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return json.dumps(value) if isinstance(value, bool) or value is None else str(value)


def target_html(target: Mapping[str, Any]) -> Markup:
    """A record's target, readable (``tags: a, b · soft: false``; empty lists and
    ``false`` flags of a purge left out), the whole JSON in its tooltip.  Pure."""
    whole = json.dumps(target, separators=(",", ":"), sort_keys=True)
    parts = [f"{key}: {said(value)}" for key, value in sorted(target.items())
             if value not in ([], False, None)]
    return Markup(f'<span class="detail" title="{esc(whole)}">'
                  f'{esc(" · ".join(parts) or "—")}</span>')


def outcome_html(outcome: str) -> Markup:
    """An outcome as a coloured tag.  Pure."""
    return Markup(f'<span class="tag {TONES.get(outcome, "")}">{esc(outcome)}</span>')


def rows_html(records: Sequence[Mapping[str, Any]], now: float) -> Markup:
    """The records' table, newest first as given (what happened and how it ended first:
    the columns a phone shows without scrolling).  Pure."""
    rows = [(moment(r["at"], now), Markup(f"<code>{esc(r['action'])}</code>"),
             outcome_html(r["outcome"]), actor_html(r["actor"]), target_html(r["target"]),
             shown(r["count"], "count")) for r in records]
    return Markup('<div class="audit-log">' + table(
        ("When", "What", "Outcome", "Who", "Target", "Count"), rows, empty="no records",
        numeric=(5,), label="Audit records") + "</div>")


def filter_form(action: str) -> Markup:
    """The GET form that filters by a known action or any other (free text).  Pure."""
    known = action in ACTIONS
    options = "".join(f'<option value="{esc(name)}"{" selected" if name == action else ""}>'
                      f"{esc(name)}</option>" for name in ACTIONS)
    return Markup(
        f'<form class="tool" method="get" {url_attr("action", "/audit")}><label>Action'
        '<select name="action">'
        f'<option value="">every action</option>{options}</select></label>'
        '<label>or another<input name="other" placeholder="POST /api/warm" size="22" '
        f'value="{esc("" if known else action)}"></label>'
        '<button type="submit" class="act">Filter</button></form>')


def pager_html(records: Sequence[Mapping[str, Any]], action: str, more: bool,
               before: int | None) -> Markup:
    """The links to older records (after the last shown) and back to the newest.  Pure."""
    query = {"action": action} if action else {}
    links = []
    if before is not None:
        links.append(f'<a {url_attr("href", "/audit?" + urlencode(query))}>Newest</a>')
    if more and records:
        older = urlencode({**query, "before": records[-1]["id"]})
        links.append(f'<a {url_attr("href", "/audit?" + older)} rel="next">Older</a>')
    return Markup(f'<p class="pager">{" ".join(links)}</p>' if links else "")


def audit_html(records: Sequence[Mapping[str, Any]], now: float, action: str, more: bool,
               before: int | None) -> str:
    """The page's content: the filter, the records (a page of them), the pager.  Pure."""
    what = f"Records of <code>{esc(action)}</code>" if action else "Every record"
    return (heading("Audit") + '<p class="lead">Every change and every refused call: who '
            "(a token or session by its fingerprint), what, on what, and how it ended.</p>"
            f"{filter_form(action)}<div data-live><p>{what}, newest first.</p>"
            f"{rows_html(records, now)}{pager_html(records, action, more, before)}</div>")


async def content(request: Request, sources: Sources) -> str:
    """A page of the audit log: ``?action=`` (or ``?other=``) and ``?before=<id>``."""
    params = request.query_params
    action = params.get("other", "").strip() or params.get("action", "").strip()
    raw = params.get("before", "")
    before = int(raw) if raw.isdigit() else None
    stoker = sources.stoker
    found = await stoker.audit.recent(PAGE + 1, action=action or None, before=before)
    return audit_html(found[:PAGE], stoker.clock.now(), action, len(found) > PAGE, before)


VIEW: Final = View("Audit", "/audit", content)

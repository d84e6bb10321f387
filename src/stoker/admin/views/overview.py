"""The overview's parts beyond its plain figures, rendered from a composed status (the
first paint; ``dashboard.js`` redraws them alike from each status event): the origin's
banner, the uncacheable requests by reason and what is cold now.

Invariant: every function is pure (a status and ``now`` in, HTML or text out), and says
something in words when there is nothing to show (never an empty box).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from stoker.admin.views.html import Markup, esc, link, moment, shown, span

REASONS_SHOWN: Final = 5
"""The uncacheable reasons the Visitors card lists."""


def banner_text(status: Mapping[str, Any]) -> str:
    """What the banner says of the origin ("" while it answers): down since when (``now``
    relative), and whether stale copies are answering for it.  Pure."""
    breaker = status.get("breaker") or {}
    since = status.get("origin_down_since")
    if since is None and breaker.get("phase", "closed") == "closed":
        return ""
    now = float(status.get("now") or 0.0)
    when = f" (for {span(now - since)})" if since is not None else ""
    stale = int(status.get("stale_if_error") or 0)
    served = (f"Stoker answers from stale copies where it has them ({shown(stale, 'count')} "
              "so far) and 503 where it has none.") if stale else (
              "Stoker answers 503 where it has no stale copy.")
    probing = " Its breaker is half-open: Stoker is trying it again." if (
        breaker.get("phase") == "half_open") else ""
    return f"The origin is down{when}.{probing} {served}"


def reasons_html(status: Mapping[str, Any]) -> Markup:
    """The visitors' uncacheable requests by reason, most first (at most
    :data:`REASONS_SHOWN`), or a line saying there are none.  Pure."""
    reasons = list((status.get("uncacheable") or {}).items())[:REASONS_SHOWN]
    if not reasons:
        return Markup('<li class="detail">No uncacheable requests.</li>')
    return Markup("".join(f"<li><span>{esc(reason)}</span> <b>{esc(shown(count, 'count'))}</b></li>"
                          for reason, count in reasons))


def cold_urls_html(status: Mapping[str, Any]) -> Markup:
    """The few purged URLs waiting for their re-warm, or why there are none.  Pure."""
    cold = (status.get("warm") or {}).get("cold")
    if cold is None:
        return Markup('<li class="detail">No warmer runs in this process.</li>')
    if not cold["urls"]:
        return Markup('<li class="detail">Nothing purged is waiting for a re-warm.</li>')
    more = cold["pending"] - len(cold["urls"])
    items = "".join(f"<li><code>{esc(url)}</code></li>" for url in cold["urls"])
    tail = f'<li class="detail">and {esc(shown(more, "count"))} more</li>' if more > 0 else ""
    return Markup(items + tail)


def next_warm_html(status: Mapping[str, Any]) -> Markup:
    """When the next warm run is due, and which (``rewarm``, ``refresh``…), or ``—``.
    Pure."""
    cold = (status.get("warm") or {}).get("cold") or {}
    due = cold.get("next_warm")
    if due is None:
        return Markup("—")
    return Markup(f"{esc(due['name'])} {moment(due['due_at'], float(status.get('now') or 0))}")


def warm_link() -> str:
    """The Warm page's address (under the mount path)."""
    return link("/warm")

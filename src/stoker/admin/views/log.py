"""The Log page: the requests this Stoker answers, live (``GET /api/log``), filtered by
outcome, status, path prefix, client and host, with a pause button.

The filter is a GET form: the page is rendered again with it, a filter that does not
parse said next to the form (no stream opened); ``dashboard.js`` opens the stream with
the page's query (``data-log``) and adds each request at the top of the list, keeping
the newest :data:`KEPT` lines.  Every value is escaped; the lines themselves are built
by the script as text, never as HTML.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final
from urllib.parse import urlencode

from starlette.requests import Request

from stoker.admin.views import Sources, View
from stoker.admin.views.html import Markup, esc, heading, url_attr
from stoker.proxy.log_filter import FIELDS, FilterError, describe, parse_filter

KEPT: Final = 500
"""Lines the page keeps (the oldest leave first)."""
HINTS: Final[Mapping[str, tuple[str, str]]] = {
    "outcome": ("hit,miss,pass,bypass,error,stale", "miss,pass"),
    "status": ("codes or classes", "5xx,404"),
    "path": ("a path prefix", "/blog"),
    "client": ("an address or a network", "203.0.113.0/24"),
    "host": ("the Host", "example.com"),
}
"""Each filter's tooltip and placeholder."""


def filter_form(values: Mapping[str, str]) -> Markup:
    """The filter's GET form, holding ``values``.  Pure."""
    inputs = "".join(
        f'<label>{esc(name.capitalize())}<input name="{esc(name)}" '
        f'value="{esc(values.get(name, ""))}" '
        f'title="{esc(HINTS[name][0])}" placeholder="{esc(HINTS[name][1])}" size="14" '
        'autocomplete="off"></label>' for name in FIELDS)
    return Markup(f'<form class="tool log-filter" method="get" {url_attr("action", "/log")}>'
                  f'{inputs}<button type="submit" class="act">Filter</button>'
                  f'<a class="clear" {url_attr("href", "/log")}>Clear</a></form>')


def log_html(values: Mapping[str, str], processes: int, shown: int) -> str:
    """The page's content for the filter ``values``, ``shown`` of the ``processes``
    serving processes sending their requests here.  Pure."""
    try:
        wanted = parse_filter(values)
    except FilterError as error:
        return (heading("Log", live=False) + filter_form(values)
                + f'<p class="error" role="alert">{esc(error)}</p>')
    query = urlencode({name: value for name, value in values.items() if value})
    note = (f'<p class="notice">Only the requests of {shown} of the {processes} serving '
            "processes show here.</p>") if shown < processes else ""
    return (heading("Log", live=False)
            + '<p class="lead">Each request Stoker answers, as it answers it, newest first: '
            "when, what the cache did, the status, the URL, the client, the time it took "
            "and the bytes. Nothing is recorded while nobody watches.</p>"
            f"{filter_form(values)}{note}"
            '<div class="log-bar"><span id="log-state" class="detail" role="status">'
            f"Showing {esc(describe(wanted))}.</span>"
            '<button type="button" id="log-pause" aria-pressed="false">Pause</button></div>'
            f'<ol class="log-lines" id="log-lines" {url_attr("data-log", "/api/log?" + query)} '
            f'data-kept="{KEPT}" aria-live="off">'
            '<li class="empty">No requests yet — requests Stoker answers appear here as '
            "they arrive (open the site in another tab).</li></ol>")


async def content(request: Request, sources: Sources) -> str:
    """The page for ``?outcome=&status=&path=&client=&host=``."""
    values = {name: request.query_params.get(name, "").strip() for name in FIELDS}
    stoker = sources.stoker
    return log_html(values, stoker.settings.processes, 1 + stoker.pipeline.tap.others)


VIEW: Final = View("Log", "/log", content)

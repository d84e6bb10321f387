"""Small pure helpers the dashboard's pages are rendered with.

Invariant: a value reaches the HTML only through :func:`esc` (or as :class:`Markup`, HTML
one of these helpers built from escaped values), so nothing an origin, a URL or a client
sent can add markup to a page.  Formats match ``dashboard.js``'s, so a figure reads the
same rendered here or updated live.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Final
from urllib.parse import quote

from stoker.asgi import ASGIApp, Message, Receive, Send


class Markup(str):
    """HTML built from escaped values: :func:`esc` passes it through unchanged."""

    __slots__ = ()


Cell = str | Markup
"""A table cell: plain text (escaped) or :class:`Markup`."""

ROOT: ContextVar[str] = ContextVar("stoker_admin_root", default="")
"""Where the admin side is mounted for the request being answered (its ASGI
``root_path``, URL-quoted, no trailing slash): ``""`` on the standalone admin listener,
``/stoker`` in an app that mounts it there (:class:`Rooted` sets it)."""


def root_of(scope: Message) -> str:
    """The mount path of an ASGI request, ready for a URL or an attribute: its
    ``root_path`` percent-quoted (so it holds no quote, ``&`` or ``<``), without a
    trailing slash.  Pure."""
    return quote(str(scope.get("root_path") or "").rstrip("/"), safe="/")


def link(path: str) -> str:
    """The URL of the admin route ``path`` (``/cache``, ``/api/purge``, ``/static/x``)
    as the browser must ask for it: under the mount path of the request being answered.
    Every link, form action, API call and asset of the pages is built with it."""
    return ROOT.get() + path


def url_attr(name: str, path: str) -> Markup:
    """The attribute ``name`` (``href``, ``action``) holding :func:`link` of ``path``,
    escaped.  Pure but for the mount path."""
    return Markup(f'{name}="{esc(link(path))}"')


class Rooted:
    """ASGI wrapper: :data:`ROOT` is the request's mount path while ``app`` answers it."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        token = ROOT.set(root_of(scope))
        try:
            await self._app(scope, receive, send)
        finally:
            ROOT.reset(token)


def esc(value: Any) -> Markup:
    """``value`` as HTML text: escaped, unless it is :class:`Markup` already.  Pure."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape("" if value is None else str(value)))


def shown(value: Any, style: str) -> str:
    """A figure as the pages show it (``dashboard.js`` formats alike).  Pure."""
    if value is None:
        return "—"
    if style == "percent":
        return f"{float(value) * 100:.1f} %"
    if style == "rate":
        return f"{float(value):.1f} req/s"
    if style == "ms":
        return f"{float(value) * 1000:.0f} ms"
    if style == "bytes":
        size, unit = float(value), "B"
        for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
            if size < 1024 or unit == "TiB":
                break
            size /= 1024
        return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
    if style == "count":
        return f"{int(value):,}".replace(",", " ")
    return str(value)


def span(seconds: float) -> str:
    """A duration as a person says it: ``42 s``, ``3 min``, ``2 h 5 min``, ``3 d``.  Pure."""
    seconds = abs(seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min"
    if seconds < 86400:
        hours, minutes = divmod(int(seconds) // 60, 60)
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{seconds // 86400:.0f} d"


def moment(at: float | None, now: float) -> Markup:
    """A wall-clock time relative to ``now`` (``in 3 min``, ``42 s ago``), the UTC time in
    its tooltip; ``—`` for none.  Pure."""
    if at is None:
        return Markup("—")
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
    said = f"in {span(at - now)}" if at > now else f"{span(now - at)} ago"
    return Markup(f'<time datetime="{esc(stamp)}" title="{esc(stamp)}">{esc(said)}</time>')


STACKED: Final = 4
"""Tables of at least this many columns are laid out one card per row on a phone."""


def table(head: Sequence[str], rows: Iterable[Sequence[Cell]], *, empty: str,
          numeric: Iterable[int] = (), label: str = "") -> Markup:
    """A data table: ``head`` the column titles, ``rows`` the cells (column indexes in
    ``numeric`` right-aligned), ``empty`` said in one row when there are none.  Each cell
    carries its column's title (``data-label``): a wide table (:data:`STACKED` columns)
    is shown on a phone as one card per row, each value under its title.  Pure."""
    right = frozenset(numeric)

    def cell(tag: str, index: int, value: Cell) -> str:
        mark = ' class="num"' if index in right else ""
        named = f' data-label="{esc(head[index])}"' if tag == "td" and index < len(head) else ""
        return f"<{tag}{mark}{named}>{esc(value)}</{tag}>"

    titles = "".join(cell("th", i, title) for i, title in enumerate(head))
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(row)) + "</tr>"
                   for row in rows)
    if not body:
        body = f'<tr><td colspan="{len(head)}" class="empty">{esc(empty)}</td></tr>'
    named = f' aria-label="{esc(label)}"' if label else ""
    kind = "data stack" if len(head) >= STACKED else "data"
    return Markup(f'<div class="scroll"><table class="{kind}"{named}><thead><tr>{titles}'
                  f"</tr></thead><tbody>{body}</tbody></table></div>")


def facts(pairs: Iterable[tuple[str, Cell]]) -> Markup:
    """A definition list of ``(term, value)``.  Pure."""
    return Markup("<dl>" + "".join(f"<dt>{esc(term)}</dt><dd>{esc(value)}</dd>"
                                   for term, value in pairs) + "</dl>")


ACTION_FIELDS: Final = ("method", "confirm", "typed", "confirm-label", "done", "replace")


def action(label: str, api: str, *, body: Mapping[str, Any] | None = None,
           danger: bool = False, **options: str | bool) -> Markup:
    """A button ``dashboard.js`` turns into an API call: ``api`` (an admin route, put
    under the mount path here: :func:`link`) with the JSON ``body``.
    ``options`` (see :data:`ACTION_FIELDS`): ``method`` (default POST); ``confirm``, the
    question of a confirm dialog (Cancel focused); ``typed``, what the user must type
    there to be let through; ``confirm_label``; ``done``, what to say after; ``replace``,
    on a 409 offer to send it again with ``"replace": true``.  Pure."""
    attrs = [f'data-api="{esc(link(api))}"']
    if body is not None:
        attrs.append(f'data-body="{esc(json.dumps(body, separators=(",", ":")))}"')
    for name, value in options.items():
        field = name.replace("_", "-")
        if field not in ACTION_FIELDS:
            raise TypeError(f"action(): unknown option {name}")
        if value is True:
            attrs.append(f"data-{field}")
        elif value:
            attrs.append(f'data-{field}="{esc(value)}"')
    kind = "danger" if danger else "act"
    return Markup(f'<button type="button" class="{kind}" {" ".join(attrs)}>'
                  f"{esc(label)}</button>")


def heading(title: str, *, live: bool = True) -> Markup:
    """A page's ``h1``; with ``live`` the pill ``dashboard.js`` shows the event stream's
    state in (a page with ``[data-live]`` regions has it).  Pure."""
    pill = (' <span class="live" id="live" data-state="connecting">connecting…</span>'
            if live else "")
    return Markup(f"<h1>{esc(title)}{pill}</h1>")


def no_warmer() -> Markup:
    """What a page of the warmer says in a process without one."""
    return Markup('<p class="notice">This Stoker runs no warmer: start it with '
                  "<code>stoker serve</code> (or <code>stoker worker</code>) on the same "
                  "configuration.</p>")

"""The dashboard's pages: login and logout, the overview, the static assets.

Pages are server-rendered from the templates in ``web/`` with :class:`string.Template`
(no template engine to install: the pages are few, and their dynamic parts are built
here, every value escaped); ``web/dashboard.js`` keeps them live from ``/api/events``.
No asset comes from elsewhere and no script is inline (the guard's CSP forbids both).

Routes (behind :class:`~stoker.admin.guard.AdminGuard`, which sends a page without a
session to ``/login``):
- ``GET /login`` the form; ``GET /login?once=CODE`` logs in with a one-time code
  (:meth:`~stoker.admin.sessions.Sessions.once`) and spends it.
- ``POST /login`` (form field ``token``) → ``303`` to ``/`` with the session cookie;
  a wrong token → 401 and the form again; past the limit of failed authentications of
  the client (:mod:`~stoker.admin.login_limit`, shared with the API's bearer tokens)
  → 429 with ``Retry-After``, the token unread (the slot is taken before the form is
  read, given back when the token is right; so is a one-time link's).
- ``POST /logout`` ends the session, clears the cookie, ``303`` to ``/login``.
- ``GET /`` the overview; ``GET /<page>`` each of :data:`VIEWS`; with ``X-Stoker-Part: 1``
  a page's content alone (``dashboard.js`` refreshes the live region with it);
  ``GET /static/NAME`` the assets.

Invariants: every login, failed login and logout is audited (failures through the
rate-limited :class:`~stoker.admin.audit.RefusalAudit`), the token only as a
fingerprint; the cookie is HttpOnly, SameSite=Strict, and, when the request came over
https (the connection's, or a trusted proxy's word for it), Secure and named with the
``__Host-`` prefix; a session is bound to the site (scheme and Host) it was opened on.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from importlib.resources import files
from string import Template
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from stoker.admin.api import read_limited
from stoker.admin.auth import authenticate
from stoker.admin.events import StatusHub
from stoker.admin.guard import Gate
from stoker.admin.hit_ratio import answered
from stoker.admin.login_limit import Refused, retry_seconds
from stoker.admin.sessions import Sessions, cookie_value, place_of, set_cookie
from stoker.admin.views import (
    Sources,
    View,
    audit,
    cache,
    credentials,
    jobs,
    log,
    schedule,
    warm,
    why,
)
from stoker.admin.views.html import link, shown, url_attr
from stoker.admin.views.overview import (
    banner_text,
    cold_urls_html,
    next_warm_html,
    reasons_html,
    warm_link,
)
from stoker.purge.audit import record_safely

if TYPE_CHECKING:  # the assembly is above the admin layer: its types only
    from stoker.admin.facade import RunningStoker, RunningWarmer

WEB: Final = files("stoker.admin") / "web"
ASSETS: Final = {"dashboard.js": "text/javascript; charset=utf-8",
                 "dashboard.css": "text/css; charset=utf-8", "favicon.svg": "image/svg+xml"}
VIEWS: Final[tuple[View, ...]] = (warm.VIEW, jobs.VIEW, cache.VIEW, log.VIEW, why.VIEW,
                                   schedule.VIEW, audit.VIEW, credentials.VIEW)
"""The pages past the overview, in the navigation's order."""
PART: Final = "x-stoker-part"
"""The request header with which ``dashboard.js`` asks for a page's content alone."""
MAX_FORM: Final = 4096


def template(name: str) -> Template:
    return Template(WEB.joinpath(name).read_text(encoding="utf-8"))


def nav_html(current: str) -> str:
    """The page links, the current one marked.  Pure."""
    items = []
    for label, path in (("Overview", "/"), *((view.label, view.path) for view in VIEWS)):
        mark = ' aria-current="page"' if path == current else ""
        items.append(f'<a href="{html.escape(link(path))}"{mark}>{html.escape(label)}</a>')
    return "".join(items)


def _at(status: Mapping[str, Any], path: str) -> Any:
    value: Any = status
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


FIELDS: Final = {"rate": ("requests_per_second", "rate"), "hit_ratio": ("hit_ratio", "percent"),
                 "cache": ("served_by.cache", "count"), "miss": ("served_by.miss", "count"),
                 "uncacheable": ("served_by.uncacheable", "count"),
                 "origin_failure": ("served_by.origin_failure", "count"),
                 "errors": ("served_by.error", "count"), "warm": ("served_by.warm", "count"),
                 "cache_bytes": ("cache_bytes", "bytes"),
                 "origin_bytes": ("origin_bytes", "bytes"),
                 "breaker": ("breaker.phase", "text"), "p50": ("origin_timing.p50", "ms"),
                 "p99": ("origin_timing.p99", "ms"),
                 "answers": ("origin_timing.answers", "count"),
                 "failures": ("origin_timing.failures", "count"),
                 "l1_entries": ("l1.entries", "count"), "l1_bytes": ("l1.bytes", "bytes"),
                 "l2_entries": ("store.entries", "count"), "l2_bytes": ("store.bytes", "bytes"),
                 "pending": ("pending_l2_writes", "count"),
                 "cold_pending": ("warm.cold.pending", "count"),
                 "cold_expired": ("expired.count", "count"), "node": ("node", "text"),
                 "proxy_url": ("proxy_url", "text")}
"""The overview's figures: template name → (path in the status, format)."""


def _row(cells: list[tuple[str, bool]]) -> str:
    return "<tr>" + "".join(('<td class="num">' if num else "<td>") + html.escape(text) + "</td>"
                            for text, num in cells) + "</tr>"


def outcome_rows_html(status: Mapping[str, Any]) -> str:
    """The outcomes table's rows.  Pure."""
    rows = [_row([(row["kind"], False), (row["reason"] or "—", False), (row["source"], False),
                  (shown(row["count"], "count"), True)]) for row in status.get("outcomes", ())]
    return "".join(rows) or '<tr><td colspan="4">no requests yet</td></tr>'


def node_rows_html(status: Mapping[str, Any]) -> str:
    """The nodes table's rows.  Pure."""
    rows = []
    for node in status.get("nodes", ()):
        figures = node.get("figures") or {}
        up = figures.get("origin_up")
        name = node["name"] + (" (this one)" if node["name"] == status.get("node") else "")
        rows.append(_row([(name, False), ("live" if node.get("live") else "gone", False),
                          (shown(answered(figures) if figures else None, "count"), True),
                          (shown(figures.get("hit_ratio"), "percent"), True),
                          ("—" if up is None else "up" if up else "down", False),
                          (shown(figures.get("origin_p50"), "ms"), True)]))
    return "".join(rows)


def overview_html(status: Mapping[str, Any]) -> str:
    """The overview's content, rendered from a composed status.  Pure."""
    values = {name: shown(_at(status, path), style) for name, (path, style) in FIELDS.items()}
    banner = banner_text(status)
    return template("overview.html").substitute(
        {name: html.escape(value) for name, value in values.items()},
        outcomes=outcome_rows_html(status), nodes=node_rows_html(status),
        banner=html.escape(banner), banner_hidden="" if banner else "hidden",
        empty_hidden="hidden" if status.get("hit_ratio") is not None else "",
        uncacheable_reasons=reasons_html(status), cold_urls=cold_urls_html(status),
        next_warm=next_warm_html(status), warm_link=html.escape(warm_link()))


def page_html(title: str, page: str, content: str, *, nav: bool, logout: bool) -> str:
    """A whole page around ``content`` (trusted HTML built here), with the page links
    (``nav``) and a log-out button (``logout``).  Pure."""
    account = (f'<form method="post" {url_attr("action", "/logout")} class="logout">'
               '<button type="submit">Log out</button></form>') if logout else ""
    return template("page.html").substitute(
        title=html.escape(title), page=html.escape(page), root=html.escape(link("")),
        nav=nav_html(page) if nav else "", account=account, content=content)


def login_html(message: str = "") -> str:
    """The login page, with ``message`` (plain text) above the form.  Pure."""
    note = f'<p class="error" role="alert">{html.escape(message)}</p>' if message else ""
    return page_html("Log in", "/login", template("login.html").substitute(message=note,
                                                                       root=html.escape(link(""))),
                     nav=False, logout=False)


def page_routes(stoker: RunningStoker, warm: RunningWarmer | None, hub: StatusHub,
                sessions: Sessions, gate: Gate) -> list[Route]:
    """The page routes for one running Stoker process (and its warmer, if any)."""
    token = stoker.settings.admin_token
    refusals, limiter = gate.refusals, gate.limiter
    assets = {name: WEB.joinpath(name).read_bytes() for name in ASSETS}
    sources = Sources(stoker, warm, hub.source)

    def client_of(request: Request) -> str:
        return gate.client_of(request.scope)

    async def too_many(client: str, refused: Refused) -> Response:
        seconds = retry_seconds(refused.wait)
        await refusals.refused(client=client, actor="anonymous", action="login",
                               target={"path": "/login", "status": 429,
                                       "error": "too many failed logins"})
        return HTMLResponse(login_html(f"Too many failed logins from {client}: try again "
                                       f"in {seconds} s."), status_code=429,
                            headers={"retry-after": str(seconds)})

    trusted = stoker.pipeline.config.trusted

    async def open_session(request: Request, actor: str, how: str) -> Response:
        place = place_of(request.scope, trusted)
        secret, session = await sessions.open(place.site)
        await record_safely(stoker.audit, actor=session.actor, action="login",
                            target={"client": client_of(request), "by": how, "with": actor},
                            count=None, outcome="ok")
        response = RedirectResponse(link("/"), status_code=303)
        response.headers["set-cookie"] = set_cookie(secret, max_age=sessions.lifetime,
                                                    secure=place.secure)
        return response

    async def login_form(request: Request) -> Response:
        if token is None:
            return RedirectResponse(link("/"), status_code=303)
        code = request.query_params.get("once")
        if code is None:
            return HTMLResponse(login_html())
        client = client_of(request)
        slot = limiter.reserve(client)
        if isinstance(slot, Refused):
            return await too_many(client, slot)
        if sessions.spend(code):
            limiter.refund(slot)
            return await open_session(request, "one-time link", "once")
        await refusals.refused(client=client, actor="anonymous", action="login",
                               target={"path": "/login", "status": 401,
                                       "error": "one-time login link used or expired"})
        return HTMLResponse(login_html("That login link was used already or has expired: "
                                       "log in with the admin token."), status_code=401)

    async def login(request: Request) -> Response:
        if token is None:
            return RedirectResponse(link("/"), status_code=303)
        client = client_of(request)
        slot = limiter.reserve(client)  # before the form is awaited: guesses racing in wait
        if isinstance(slot, Refused):
            return await too_many(client, slot)
        body = await read_limited(request, MAX_FORM)
        fields = parse_qs((body or b"").decode("utf-8", "replace"), max_num_fields=8)
        presented = (fields.get("token") or [""])[0].strip() or None
        decision = authenticate(token, presented)
        if decision.allowed:
            limiter.refund(slot)
            return await open_session(request, decision.actor, "token")
        await refusals.refused(client=client, actor=decision.actor, action="login",
                               target={"path": "/login", "status": 401,
                                       "error": "wrong admin token"})
        return HTMLResponse(login_html("That is not the admin token."), status_code=401)

    async def logout(request: Request) -> Response:
        place = place_of(request.scope, trusted)
        ended = await sessions.close(cookie_value(request.headers.get("cookie"), place.cookie))
        if ended is not None:
            await record_safely(stoker.audit, actor=ended.actor, action="logout",
                                target={"client": client_of(request)}, count=None,
                                outcome="ok")
        response = RedirectResponse(link("/login"), status_code=303)
        response.headers["set-cookie"] = set_cookie("", max_age=0, secure=place.secure)
        return response

    def whole(request: Request, title: str, path: str, content: str) -> Response:
        if request.headers.get(PART) == "1":
            return HTMLResponse(content)
        session = request.scope.get("state", {}).get("session")
        return HTMLResponse(page_html(title, path, content, nav=True,
                                      logout=session is not None))

    async def overview(request: Request) -> Response:
        return whole(request, "Overview", "/", overview_html(await hub.source.compose()))

    def view_route(view: View) -> Route:
        async def endpoint(request: Request) -> Response:
            return whole(request, view.label, view.path, await view.content(request, sources))
        return Route(view.path, endpoint, methods=["GET"])

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in assets:
            return Response("not found\n", status_code=404, media_type="text/plain")
        return Response(assets[name], media_type=ASSETS[name])

    return [Route("/", overview, methods=["GET"]), *(view_route(view) for view in VIEWS),
            Route("/login", login_form, methods=["GET"]),
            Route("/login", login, methods=["POST"]),
            Route("/logout", logout, methods=["POST"]),
            Route("/static/{name}", asset, methods=["GET"])]


"""The admin listener: the dashboard's pages, health, readiness, metrics, status and its
event stream, purges, entry inspection, audit log, why not cached, warm runs and jobs.

Invariants: every admin response carries ``Cache-Control: no-store`` and the security
headers; every route but ``/healthz`` and ``/readyz`` passes
:class:`~stoker.admin.guard.AdminGuard` (token or session, same-origin writes,
loopback-only when no token is configured); ``/api/status`` and ``/api/events`` give the
same composed status (:class:`~stoker.admin.status.StatusSource`).

Mounted in an app (``Stoker.asgi(app, admin="/stoker")``, or any ASGI mount that sets
``root_path``), every URL a page holds (links, forms, assets, API calls, the event
stream) and every redirect is under that path (:func:`~stoker.admin.views.html.link`,
``data-root`` for ``dashboard.js``); on the standalone listener ``root_path`` is empty
and they are the root paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stoker.admin import health, metrics
from stoker.admin.api import api_routes
from stoker.admin.events import PokeOnWrite, StatusHub, events_endpoint
from stoker.admin.guard import AdminGuard, Gate
from stoker.admin.jobs_api import jobs_routes
from stoker.admin.login_limit import LoginLimiter
from stoker.admin.pages import page_routes
from stoker.admin.request_log import log_routes
from stoker.admin.sessions import Sessions
from stoker.admin.status import StatusSource
from stoker.admin.views.html import Rooted
from stoker.admin.warm_api import warm_routes
from stoker.admin.why import why_routes
from stoker.asgi import ASGIApp, Message
from stoker.proxy.request import request_client

if TYPE_CHECKING:  # the assembly is above the admin layer: its types only
    from stoker.admin.facade import RunningStoker, RunningWarmer


@dataclass(frozen=True, slots=True)
class AdminSide:
    """The admin ASGI app, the status hub its owner runs beside it
    (:meth:`StatusHub.run`: the charts' history is kept while nobody watches) and the
    session book."""

    app: ASGIApp
    hub: StatusHub
    sessions: Sessions


def open_sessions(stoker: RunningStoker) -> Sessions:
    """The session book of ``stoker``'s admin listener, kept in its ``data_dir``."""
    settings = stoker.settings
    return Sessions.load(settings.data_dir, stoker.clock, token=settings.admin_token,
                         lifetime=settings.admin_session_lifetime)


def admin_side(stoker: RunningStoker, warm: RunningWarmer | None = None, *,
               sessions: Sessions | None = None, hub: StatusHub | None = None) -> AdminSide:
    """The admin side for one running Stoker process (and its warmer, if any); ``hub``
    a status hub over them (default: one with the default timings)."""
    sessions = sessions or open_sessions(stoker)
    hub = hub or StatusHub(StatusSource(stoker, warm))
    def client_of(scope: Message) -> str:
        return request_client(scope, list(scope.get("headers") or ()),
                              stoker.pipeline.config.trusted) or "unknown"

    gate = Gate(stoker.refusals, LoginLimiter(stoker.clock), client_of)
    probe = health.WriteProbe(stoker.settings.data_dir, stoker.clock)

    async def alive(_: Request) -> Response:
        return JSONResponse({"ok": True})

    async def ready(_: Request) -> Response:
        status, body = health.verdict(await health.readiness(stoker, warm, probe))
        return JSONResponse(body, status_code=status)

    ledger = metrics.Ledger()

    async def scrape(_: Request) -> Response:
        found = metrics.families(await metrics.read(stoker, warm, ledger))
        return Response(metrics.exposition(found), media_type=metrics.CONTENT_TYPE)

    async def status(_: Request) -> Response:
        return JSONResponse(await hub.source.compose())

    app = Starlette(routes=[Route("/healthz", alive), Route("/readyz", ready),
                            Route("/metrics", scrape), Route("/api/status", status),
                            Route("/api/events", events_endpoint(hub, sessions)),
                            *page_routes(stoker, warm, hub, sessions, gate),
                            *api_routes(stoker), *log_routes(stoker, sessions),
                            *why_routes(stoker), *warm_routes(warm),
                            *jobs_routes(warm)])
    guarded = AdminGuard(PokeOnWrite(Rooted(app), hub), token=stoker.settings.admin_token,
                         gate=gate, sessions=sessions,
                         allowed_origins=stoker.settings.admin_allowed_origins,
                         trusted=stoker.pipeline.config.trusted)
    return AdminSide(guarded, hub, sessions)


def build_admin_app(stoker: RunningStoker, warm: RunningWarmer | None = None) -> ASGIApp:
    """The admin ASGI app alone (its hub runs while an event stream is open)."""
    return admin_side(stoker, warm).app

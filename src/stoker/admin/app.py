"""The admin listener: health, status, purges, entry inspection, audit log.

Invariants: every admin response carries ``Cache-Control: no-store``;
every ``/api`` route passes :class:`~stoker.admin.guard.AdminGuard` (token,
same-origin writes, loopback-only when no token is configured).  ``/healthz``
is open.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stoker.admin.api import api_routes
from stoker.admin.audit import RefusalAudit
from stoker.admin.guard import AdminGuard, ASGIApp
from stoker.runtime import Stoker


def build_admin_app(stoker: Stoker) -> ASGIApp:
    """The admin ASGI app for one running :class:`Stoker`."""

    async def health(_: Request) -> Response:
        return JSONResponse({"ok": True})

    async def status(_: Request) -> Response:
        body: dict[str, Any] = {
            "origin": stoker.settings.origin,
            "version": stoker.pipeline.version,
            "requests": dict(stoker.pipeline.stats),
            "store": await stoker.store.stats(),
            "pending_l2_writes": stoker.store.pending(),
            "in_flight": len(stoker.pipeline.collapser),
        }
        return JSONResponse(body)

    app = Starlette(routes=[Route("/healthz", health), Route("/api/status", status),
                            *api_routes(stoker)])
    return AdminGuard(app, token=stoker.settings.admin_token,
                      refusals=RefusalAudit(stoker.audit, stoker.clock))

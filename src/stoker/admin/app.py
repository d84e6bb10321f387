"""The admin listener: health and status (purges and the dashboard build on it).

Invariant: every admin response carries ``Cache-Control: no-store``.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stoker.runtime import Stoker

NO_STORE = {"cache-control": "no-store"}


def build_admin_app(stoker: Stoker) -> Starlette:
    """The admin ASGI app for one running :class:`Stoker`."""

    async def health(_: Request) -> Response:
        return JSONResponse({"ok": True}, headers=NO_STORE)

    async def status(_: Request) -> Response:
        body: dict[str, Any] = {
            "origin": stoker.settings.origin,
            "version": stoker.pipeline.version,
            "requests": dict(stoker.pipeline.stats),
            "store": await stoker.store.stats(),
            "pending_l2_writes": stoker.store.pending(),
            "in_flight": len(stoker.pipeline.collapser),
        }
        return JSONResponse(body, headers=NO_STORE)

    return Starlette(routes=[Route("/healthz", health), Route("/api/status", status)])

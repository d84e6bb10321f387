"""The admin listener: health, readiness, metrics, status, purges, entry inspection,
audit log, why not cached.

Invariants: every admin response carries ``Cache-Control: no-store``;
every ``/api`` route and ``/metrics`` pass :class:`~stoker.admin.guard.AdminGuard`
(token, same-origin writes, loopback-only when no token is configured).  ``/healthz``
and ``/readyz`` are open (:mod:`stoker.admin.health`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stoker.admin import health, metrics
from stoker.admin.api import api_routes
from stoker.admin.audit import RefusalAudit
from stoker.admin.guard import AdminGuard
from stoker.admin.jobs_api import jobs_routes
from stoker.admin.warm_api import run_json, warm_routes
from stoker.admin.why import cookie_bypass_report, why_routes
from stoker.asgi import ASGIApp
from stoker.cache.purge_bus import Member
from stoker.server.heap import heap_status

if TYPE_CHECKING:  # the assembly is above the admin layer: its types only
    from stoker.app.stoker import Stoker
    from stoker.app.warm_service import WarmService

def members_json(members: Sequence[Member], now: float,
                 node_timeout: float) -> list[dict[str, Any]]:
    """The processes sharing the cache as ``/api/status`` lists them: name, purge-bus
    position (``confirmed``), last heartbeat, liveness, and what the heartbeat said
    (:func:`~stoker.admin.metrics.member_summary`).  Pure."""
    return [{"name": member.name, "confirmed": member.confirmed, "seen_at": member.seen_at,
             "live": now - member.seen_at <= node_timeout,
             **metrics.member_summary(member.figures)} for member in members]


async def warm_status(warm: WarmService) -> dict[str, Any]:
    """The active warm run and every deadline's next due time and last error."""
    active = await warm.stores.runs.active()
    deadlines = await warm.ticker.status()
    return {"active": run_json(active) if active else None,
            "pending_rewarm": await warm.stores.pending.count(),
            "deadlines": [{"name": d.name, "due_at": d.due_at, "last_error": d.last_error}
                          for d in deadlines]}


def build_admin_app(stoker: Stoker, warm: WarmService | None = None) -> ASGIApp:
    """The admin ASGI app for one running :class:`Stoker` (and its warmer, if any)."""

    async def alive(_: Request) -> Response:
        return JSONResponse({"ok": True})

    async def ready(_: Request) -> Response:
        status, body = health.verdict(await health.readiness(stoker, warm))
        return JSONResponse(body, status_code=status)

    async def scrape(_: Request) -> Response:
        found = metrics.families(await metrics.read(stoker, warm))
        return Response(metrics.exposition(found), media_type=metrics.CONTENT_TYPE)

    async def status(_: Request) -> Response:
        body: dict[str, Any] = {
            "origin": stoker.settings.origin,
            "origin_down_since": stoker.pipeline.health.down_since,
            "version": stoker.pipeline.version,
            "requests": dict(stoker.pipeline.stats),
            "store": await stoker.store.stats(),
            "pending_l2_writes": stoker.store.pending(),
            "in_flight": len(stoker.pipeline.collapser),
            "cookie_bypasses": cookie_bypass_report(stoker.pipeline.cookie_bypasses,
                                                    stoker.pipeline.stats),
            "gc": heap_status(),
        }
        if warm is not None:
            body["warm"] = await warm_status(warm)
        relay = stoker.purger.relay
        if relay is not None:
            body["members"] = members_json(await relay.members(), stoker.clock.now(),
                                           stoker.settings.node_timeout)
        return JSONResponse(body)

    app = Starlette(routes=[Route("/healthz", alive), Route("/readyz", ready),
                            Route("/metrics", scrape), Route("/api/status", status),
                            *api_routes(stoker), *why_routes(stoker), *warm_routes(warm),
                            *jobs_routes(warm)])
    return AdminGuard(app, token=stoker.settings.admin_token,
                      refusals=RefusalAudit(stoker.audit, stoker.clock))

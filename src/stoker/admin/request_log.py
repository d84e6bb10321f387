"""``GET /api/log``: the live request log as a Server-Sent Events stream.

Query: ``outcome``, ``status``, ``path``, ``client``, ``host``
(:mod:`~stoker.proxy.log_filter`).  Events: one ``hello`` first (the filter in words;
``processes``: the serving processes; ``shown``: how many of them send their requests
here, this one included: :mod:`~stoker.app.log_relay`),
then an ``request`` per request answered that matches (:meth:`LogRecord.as_json`), a
``dropped`` (``{"dropped": n}``) where a reader too slow lost lines, and a keep-alive
comment after :data:`KEEPALIVE` seconds without an event.

Invariants: behind :class:`~stoker.admin.guard.AdminGuard` (token or session,
``no-store``) as every ``/api`` route; a filter that does not parse is answered 400
naming its ``field``; more than :data:`~stoker.proxy.request_tap.MAX_WATCHES` streams
at once are answered 503; the watch ends with the stream (the client gone, or its session
ended), so a process nobody watches builds no record.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from stoker.admin.api import error_response
from stoker.admin.events import KEEPALIVE_COMMENT, sse
from stoker.admin.sessions import Session, Sessions
from stoker.proxy.log_filter import FIELDS, FilterError, describe, parse_filter
from stoker.proxy.request_tap import Batch

if TYPE_CHECKING:  # the assembly is above the admin layer: its types only
    from stoker.admin.facade import RunningStoker

KEEPALIVE: Final = 15.0


def batch_events(batch: Batch) -> bytes:
    """``batch`` as events: its drops (if any), then its records.  Pure."""
    dropped = [sse("dropped", {"dropped": batch.dropped})] if batch.dropped else []
    return b"".join([*dropped, *(sse("request", record.as_json())
                                 for record in batch.records)])


def log_routes(stoker: RunningStoker, sessions: Sessions) -> list[Route]:
    """The ``/api/log`` route of one running Stoker process."""

    async def stream_log(request: Request) -> Response:
        try:
            wanted = parse_filter({name: request.query_params.get(name, "")
                                   for name in FIELDS})
        except FilterError as error:
            return error_response(400, error.field, str(error))
        tap = stoker.pipeline.tap
        watch = tap.watch(wanted)
        if watch is None:
            return JSONResponse({"error": "too many request logs open"}, status_code=503)
        session: Session | None = request.scope.get("state", {}).get("session")
        hello = {"filter": describe(wanted), "processes": stoker.settings.processes,
                 "shown": 1 + tap.others}

        async def stream() -> AsyncIterator[bytes]:
            try:
                yield sse("hello", hello)
                while True:
                    batch = await watch.next(KEEPALIVE)
                    if session is not None and not sessions.holds(session):
                        return  # logged out or revoked: the page's next try gets a 401
                    yield batch_events(batch) or KEEPALIVE_COMMENT
            finally:
                tap.unwatch(watch)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"x-accel-buffering": "no"})

    return [Route("/api/log", stream_log, methods=["GET"])]

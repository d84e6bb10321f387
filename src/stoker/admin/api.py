"""The admin JSON API: purge, inspect an entry, read the audit log.

Routes (behind :class:`~stoker.admin.guard.AdminGuard`):
- ``POST /api/purge`` ``{"urls": [], "prefixes": [], "tags": [], "all": false,
  "soft": false, "host": null}`` → 200 with what was purged, and ``relayed``: false when
  the purge bus (PostgreSQL with ``database_url``) did not take it within
  ``purge_ack_timeout`` (in force here, kept, relayed to the others once the bus answers;
  ``unconfirmed`` is then ``["*"]``, every other member), and ``l2_pending``: true when the
  persistent tier did not answer (``purged`` is then the memory tier's count; the purge
  is relayed all the same and carried out in that tier once it answers).  Without
  ``"soft"`` (or with ``null``) the purge is what ``purge_mode`` says.
- ``GET /api/entry?url=…`` → what the cache holds for a URL, per variant.
- ``GET /api/audit?limit=…&action=…&before=…`` → the newest audit records (of one action;
  older than record ``before``, to page).

Invariants: a request that fails validation is answered 400 with the
offending ``field`` named and purges nothing; every purge attempt is audited
(``ok``, ``invalid`` or ``error``), and an audit write that fails is logged
without changing the answer (a purge that happened is still a 200); a body
over :data:`MAX_BODY` is refused (413) without being read whole: at once
when ``Content-Length`` says so, else as soon as the streamed chunks pass
the limit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stoker.admin.auth import ANONYMOUS
from stoker.cache.entry import CacheEntry
from stoker.purge.audit import record_safely
from stoker.purge.bus import NOT_RELAYED
from stoker.purge.scope import PurgeRequestError, expand_url, parse_purge_request

if TYPE_CHECKING:  # the assembly is above the admin layer: its types only
    from stoker.admin.facade import RunningStoker

MAX_BODY = 1024 * 1024


def error_response(status: int, field: str, message: str) -> Response:
    return JSONResponse({"error": message, "field": field}, status_code=status)


def actor_of(request: Request) -> str:
    return str(request.scope.get("state", {}).get("actor", ANONYMOUS))


async def read_limited(request: Request, limit: int) -> bytes | None:
    """The request body, or ``None`` as soon as it is known to exceed ``limit`` bytes:
    at once for a larger ``Content-Length``, else when the streamed chunks pass it."""
    declared = request.headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(body: bytes) -> Any:
    """``body`` as JSON; ``ValueError`` for anything that is not JSON Stoker can read,
    nesting too deep for the parser included (a ``RecursionError`` is no server error)."""
    try:
        return json.loads(body)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def describe_entry(entry: CacheEntry, now: float, in_l1: bool) -> dict[str, Any]:
    """One stored variant as the entry API shows it.  Pure."""
    return {
        "variant": entry.variant, "vary": list(entry.vary), "tags": list(entry.tags),
        "status": entry.status, "url": entry.url, "state": entry.freshness(now).value,
        "stored_at": entry.stored_at, "fresh_until": entry.fresh_until,
        "stale_until": entry.stale_until, "error_until": entry.error_until,
        "keep_until": entry.keep_until, "ttl": round(entry.ttl(now), 3),
        "age": round(entry.age(now), 3), "size": entry.body_size,
        "body": "inline" if entry.body is not None else "file",
        "etag": entry.etag, "last_modified": entry.last_modified,
        "tier": ["l1", "l2"] if in_l1 else ["l2"],
    }


URL_HELP = "give ?url=https://host/path (or a path and &host=)"


def asked_urls(request: Request, stoker: RunningStoker) -> tuple[str, ...]:
    """The absolute URLs ``?url=`` (and ``&host=``) stand for; ``PurgeRequestError``
    naming the field when they stand for none."""
    url = request.query_params.get("url")
    if not url:
        raise PurgeRequestError("url", URL_HELP)
    host = request.query_params.get("host")
    return expand_url(url, host, stoker.settings.site_hosts, frozenset(), "url").urls


async def stored_keys(stoker: RunningStoker, urls: tuple[str, ...],
                      now: float) -> list[dict[str, Any]]:
    """What the cache holds for each of ``urls``: its key and variants (:func:`describe_entry`)."""
    found = []
    for absolute in urls:
        key, entries, in_l1 = await stoker.purger.entries_for_url(absolute)
        found.append({"url": absolute, "key": key, "variants": [
            describe_entry(item, now, item.variant in in_l1) for item in entries]})
    return found


def api_routes(stoker: RunningStoker) -> list[Route]:
    """The ``/api`` routes for one running Stoker process."""
    settings = stoker.settings

    async def record(request: Request, target: Mapping[str, Any], count: int | None,
                     outcome: str) -> None:
        await record_safely(stoker.audit, actor=actor_of(request), action="purge", target=target,
                            count=count, outcome=outcome)

    async def purge(request: Request) -> Response:
        body = await read_limited(request, MAX_BODY)
        if body is None:
            message = f"body: purge requests are limited to {MAX_BODY} bytes"
            await record(request, {"error": message}, None, "invalid")
            return error_response(413, "body", message)
        try:
            data = parse_json(body)
            scope = parse_purge_request(data, sites=settings.site_hosts,
                                        allowed_hosts=settings.purge_hosts,
                                        purge_mode=stoker.settings.purge_mode)
        except ValueError as error:  # JSONDecodeError and PurgeRequestError
            field = error.field if isinstance(error, PurgeRequestError) else "body"
            message = str(error) if isinstance(error, PurgeRequestError) else (
                f"body: not valid JSON ({error})")
            await record(request, {"error": message}, None, "invalid")
            return error_response(400, field, message)
        try:
            result = await stoker.purger.purge(scope)
        except Exception as error:
            await record(request, scope.as_json(), None, "error")
            return error_response(500, "purge", f"the purge failed: {error}")
        await record(request, scope.as_json(), result.purged, "ok")
        return JSONResponse({**result.as_json(),
                             "relayed": NOT_RELAYED not in result.unconfirmed})

    async def entry(request: Request) -> Response:
        try:
            urls = asked_urls(request, stoker)
        except PurgeRequestError as error:
            return error_response(400, error.field, str(error))
        now = stoker.clock.now()
        return JSONResponse({"now": now, "version": stoker.pipeline.keying.version,
                             "keys": await stored_keys(stoker, urls, now)})

    async def audit(request: Request) -> Response:
        params = request.query_params
        raw, before = params.get("limit", "100"), params.get("before")
        if not raw.isdigit() or not 1 <= int(raw) <= 1000:
            return error_response(400, "limit", "limit: expected a whole number from 1 to 1000")
        if before is not None and not before.isdigit():
            return error_response(400, "before", "before: expected a record id")
        return JSONResponse({"records": await stoker.audit.recent(
            int(raw), action=params.get("action") or None,
            before=int(before) if before is not None else None)})

    return [Route("/api/purge", purge, methods=["POST"]),
            Route("/api/entry", entry, methods=["GET"]),
            Route("/api/audit", audit, methods=["GET"])]

"""The admin API of the warmer.

Routes (behind :class:`~stoker.admin.guard.AdminGuard`):
- ``POST /api/warm`` ``{"urls": [...]?, "replace": false}`` → 202 with the run
  that will do the work (a list merges into the active run; none starts a full
  run, or joins an automatic full run that is going: ``joined``), 409 while a manual
  full run is going and ``replace`` is false.
- ``GET /api/warm`` → the active run and the recent ones.
- ``GET /api/warm/{id}`` → one run, with up to 100 of its failed URLs, why discovery
  skipped URLs (``skipped_reasons``: reason → how many, most first), why its
  ``not_stored`` pages were not stored (``not_stored_reasons``: reason → how many URLs,
  most first; ``not_stored_urls``: reason → up to :data:`NOT_STORED_SHOWN` of them), and
  ``warning``: what is wrong with it once ended (:mod:`stoker.warm.verdict`), or null.
- ``POST /api/warm/{id}/cancel`` → 200 with the run, ended ``cancelled`` (its queued
  visits do nothing); 404 for no such run, 409 for one that had ended.  Audited.
- ``GET /api/warm/{id}/map?limit=…`` → the run's URLs by state (``queued``, ``warmed``,
  ``not_modified``, ``not_stored``, ``failed``, ``gave_up``, ...), at most ``limit`` (default
  and most :data:`MAP_MOST`) per state, ``truncated`` when a state had more: the
  dashboard's map of the run.
- ``GET /api/schedule`` → every persisted deadline (re-warm, daily refresh, statistics
  flush, job reaping, L2 eviction): when it is due (``null``: not armed), when its last run
  ended and its error if it failed, its attempts, and who holds it while it runs.
- ``GET /api/warm/credentials`` → every name ``warm_credentials`` allows, whether it is
  set, and when and its fingerprint if so; never a value.
- ``PUT /api/warm/credentials/{name}`` ``{"value": "…"}`` → 200 with its fingerprint;
  ``DELETE`` the same path → 200 (``removed``: whether it was set).  A name the setting
  does not allow is 404 naming the setting; a bad value 400.  Each change is audited
  (``warm-credential``, the name and the fingerprint, never the value).

Invariants: a request that fails validation is answered 400 naming the
``field`` and starts nothing; every start attempt is audited (``ok``,
``busy``, ``invalid``); with no warmer in this process every route answers
503 saying how to get one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stoker.admin.api import MAX_BODY, actor_of, error_response, parse_json, read_limited
from stoker.cache.hits import SeenOrigin
from stoker.purge.audit import record_safely
from stoker.schedule.store import Deadline
from stoker.warm.credentials import CredentialBook
from stoker.warm.origins import verdict, warm_origins
from stoker.warm.run import URL_STATES, Run
from stoker.warm.run_store import MAX_RECENT
from stoker.warm.urls import SiteOrigins, normalise, origin_of
from stoker.warm.verdict import warning
from stoker.warm.warmer import WarmBusy

if TYPE_CHECKING:  # the assembly is above the admin layer: its types only
    from stoker.admin.facade import RunningWarmer

MAX_URLS: Final = 50_000
FAILED_SHOWN: Final = 100
NOT_STORED_SHOWN: Final = 5
MAP_MOST: Final = MAX_RECENT - 1
"""The most URLs per state a map gives: one fewer than the run store lists at once, so
the one more it reads tells whether the state had more (``truncated``)."""


def run_json(run: Run) -> dict[str, Any]:
    """A run as the API and the CLI show it."""
    counts = run.counts
    return {
        "id": run.id, "reason": run.reason, "scope": run.scope, "phase": run.phase,
        "started_at": run.started_at, "finished_at": run.finished_at, "error": run.error,
        "counts": {"total": counts.total, "warmed": counts.warmed,
                   "not_modified": counts.not_modified, "not_stored": counts.not_stored,
                   "failed": counts.failed,
                   "stopgap_pending": counts.stopgap_pending, "rewarmed": counts.rewarmed,
                   "gave_up": counts.gave_up, "skipped": counts.skipped,
                   "settled": counts.settled, "open": counts.open},
    }


def deadline_json(deadline: Deadline) -> dict[str, Any]:
    """A persisted deadline as the API and the Schedule page show it.  Pure."""
    return {"name": deadline.name, "due_at": deadline.due_at,
            "first_armed_at": deadline.first_armed_at, "completed_at": deadline.completed_at,
            "last_error": deadline.last_error, "attempts": deadline.attempts,
            "owner": deadline.owner, "claimed_until": deadline.claimed_until}


async def credentials_json(book: CredentialBook) -> list[dict[str, Any]]:
    """Every name ``book`` allows, in the setting's order: whether it is set, and when and
    its fingerprint if so; never a value (the API and the Credentials page show this)."""
    stored = {info.name: info for info in await book.store.listed()}
    return [{"name": name, "set": name in stored,
             "fingerprint": stored[name].fingerprint if name in stored else None,
             "set_at": stored[name].set_at if name in stored else None}
            for name in book.allowed]


def parse_warm_request(data: Any, sites: SiteOrigins,
                       home: str) -> tuple[list[str] | None, bool]:
    """``(urls or None, replace)`` from a request body; ``ValueError`` naming the field.
    Every URL must be on one of ``sites`` (an alias's is moved onto ``home``, the first
    site's origin): a warm visit of another site would fill entries no visitor reads."""
    if not isinstance(data, dict):
        raise ValueError("body: expected a JSON object")
    unknown = sorted(set(data) - {"urls", "replace"})
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown field (known: urls, replace)")
    replace = data.get("replace", False)
    if not isinstance(replace, bool):
        raise ValueError("replace: expected true or false")
    urls = data.get("urls")
    if urls is None:
        return None, replace
    if not isinstance(urls, list) or not urls or len(urls) > MAX_URLS:
        raise ValueError(f"urls: expected a non-empty list of at most {MAX_URLS} URLs")
    placed = []
    for url in urls:
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"urls: {url!r} is not an absolute http(s) URL")
        on_site = sites.place(normalise(url) or url, home)
        if on_site is None:
            raise ValueError(f"urls: {url} is not on this site ({', '.join(sorted(sites.origins))})"
                             ": if its host is the site's, add it to site_aliases")
        placed.append(on_site)
    return placed, replace


def origins_json(site_urls: Sequence[str], seen: Sequence[SeenOrigin],
                 now: float) -> dict[str, Any]:
    """The origins visitors arrived on (``""``: hosts not the site's), the ones a full run
    warms, and the findings when the two differ.  Pure."""
    return {"seen_origins": [{"origin": row.origin, "visits": row.visits,
                              "last_seen": row.last_seen} for row in seen],
            "warmed_origins": list(warm_origins(site_urls, seen, now)),
            "origin_findings": [finding.text for finding in verdict(site_urls, seen, now)]}


async def runs_listing(service: RunningWarmer) -> dict[str, Any]:
    """``GET /api/warm``'s answer: the active run (or ``None``) and the 20 newest, the
    origins (:func:`origins_json`) and this process's warmed entries visitors read."""
    active = await service.stores.runs.active()
    recent = await service.stores.runs.recent(20)
    stoker = service.stoker
    reads = stoker.pipeline.warm_reads
    return {"active": run_json(active) if active else None,
            "recent": [run_json(run) for run in recent],
            **origins_json(stoker.settings.site_urls, await service.stores.hits.origins(),
                           stoker.clock.now()),
            "warm_reads": {"stored": reads.stored, "read": reads.read}}


async def run_detail(service: RunningWarmer, run: Run) -> dict[str, Any]:
    """``GET /api/warm/{id}``'s answer: ``run`` with its failed URLs (up to
    :data:`FAILED_SHOWN`), why URLs were skipped and pages not stored, and its warning."""
    runs = service.stores.runs
    skipped, not_stored = await runs.skipped_reasons(run.id), await runs.not_stored_reasons(run.id)
    return {**run_json(run), "failed_urls": await runs.urls(run.id, "failed", FAILED_SHOWN),
            "skipped_reasons": skipped, "not_stored_reasons": not_stored,
            "not_stored_urls": await runs.not_stored_urls(run.id, NOT_STORED_SHOWN),
            "warning": warning(run, skipped, not_stored)}


async def url_map_of(service: RunningWarmer, run: Run, most: int) -> dict[str, Any]:
    """``GET /api/warm/{id}/map``'s answer: ``run``'s URLs by state (sorted), at most
    ``most`` per state, ``truncated`` when a state had more."""
    states = {state: await service.stores.runs.urls(run.id, state, most + 1)
              for state in URL_STATES}
    return {"run": run_json(run), "truncated": any(len(urls) > most for urls in states.values()),
            "states": {state: urls[:most] for state, urls in states.items() if urls}}


async def run_of(service: RunningWarmer, request: Request) -> Run | Response:
    """The run the path's ``run_id`` names, or the 404 that says there is none."""
    raw = request.path_params["run_id"]
    run = await service.stores.runs.get(int(raw)) if str(raw).isdigit() else None
    return run if run is not None else error_response(404, "id", f"no warm run {raw}")


def warm_routes(service: RunningWarmer | None) -> list[Route]:
    """The ``/api/warm`` routes; 503s when this process has no warmer."""

    def unavailable() -> Response:
        return error_response(503, "warm", "this Stoker runs no warmer: start it with "
                              "stoker serve (or stoker worker) on the same configuration")

    async def start(request: Request) -> Response:
        if service is None:
            return unavailable()
        settings = service.stoker.settings
        site_urls = [normalise(url) or url for url in settings.site_urls]
        sites, home = SiteOrigins(site_urls, settings.aliases), origin_of(site_urls[0])
        audit = service.stoker.audit

        async def record(target: dict[str, Any], outcome: str) -> None:
            await record_safely(audit, actor=actor_of(request), action="warm", target=target,
                                count=None, outcome=outcome)

        body = await read_limited(request, MAX_BODY)
        try:
            if body is None:
                raise ValueError(f"body: warm requests are limited to {MAX_BODY} bytes")
            urls, replace = parse_warm_request(parse_json(body or b"{}"), sites, home)
        except ValueError as error:
            message = str(error) if ":" in str(error) else f"body: not valid JSON ({error})"
            await record({"error": message}, "invalid")
            return error_response(413 if body is None else 400, message.split(":")[0], message)
        target = {"urls": len(urls) if urls else "site", "replace": replace}
        try:
            created = await service.warmer.start("manual", urls, replace=replace)
        except WarmBusy as busy:
            await record(target, "busy")
            return JSONResponse({"error": str(busy), "field": "replace",
                                 "run": run_json(busy.run)}, status_code=409)
        await record({**target, "run": created.run.id}, "ok")
        return JSONResponse({"outcome": created.outcome, "run": run_json(created.run)},
                            status_code=202)

    async def runs(request: Request) -> Response:
        if service is None:
            return unavailable()
        return JSONResponse(await runs_listing(service))

    async def one(request: Request) -> Response:
        if service is None:
            return unavailable()
        run = await run_of(service, request)
        if isinstance(run, Response):
            return run
        return JSONResponse(await run_detail(service, run))

    async def cancel(request: Request) -> Response:
        if service is None:
            return unavailable()
        run = await run_of(service, request)
        if isinstance(run, Response):
            return run
        cancelled = await service.warmer.cancel(run.id)
        await record_safely(service.stoker.audit, actor=actor_of(request), action="warm-cancel",
                            target={"run": run.id}, count=None,
                            outcome="ok" if cancelled else "ended")
        if cancelled is None:
            ended = await service.stores.runs.get(run.id)
            return JSONResponse({"error": f"id: warm run {run.id} had ended "
                                 f"({ended.phase if ended else run.phase})", "field": "id"},
                                status_code=409)
        return JSONResponse(run_json(cancelled))

    async def url_map(request: Request) -> Response:
        if service is None:
            return unavailable()
        limit = request.query_params.get("limit", "")
        if limit and not (limit.isdigit() and 1 <= int(limit) <= MAP_MOST):
            return error_response(400, "limit", f"limit: 1 to {MAP_MOST} URLs per state")
        run = await run_of(service, request)
        if isinstance(run, Response):
            return run
        return JSONResponse(await url_map_of(service, run, int(limit) if limit else MAP_MOST))

    async def schedule(_: Request) -> Response:
        if service is None:
            return unavailable()
        return JSONResponse({"deadlines": [deadline_json(deadline)
                                           for deadline in await service.ticker.status()]})

    async def credentials(request: Request) -> Response:
        if service is None:
            return unavailable()
        return JSONResponse({"credentials": await credentials_json(service.credentials)})

    async def credential(request: Request) -> Response:
        if service is None:
            return unavailable()
        name = request.path_params["name"]
        book, audit = service.credentials, service.stoker.audit

        async def record(target: dict[str, Any], outcome: str) -> None:
            await record_safely(audit, actor=actor_of(request), action="warm-credential",
                                target={"name": name, "method": request.method, **target},
                                count=None, outcome=outcome)

        if name not in book.allowed:
            await record({}, "invalid")
            allowed = ", ".join(book.allowed) or "none"
            return error_response(404, "name", f"{name}: not a warm credential; allow it in "
                                  f"warm_credentials (allowed: {allowed})")
        if request.method == "DELETE":
            removed = await book.delete(name)
            await record({"removed": removed}, "ok")
            return JSONResponse({"name": name, "removed": removed})
        body = await read_limited(request, MAX_BODY)
        try:
            try:
                data = parse_json(body) if body else None
            except ValueError:
                data = None
            if not isinstance(data, dict) or set(data) != {"value"}:
                raise ValueError('body: expected {"value": "..."}')
            mark = await book.put(name, data["value"])
        except ValueError as error:
            await record({"error": str(error).split(":")[0]}, "invalid")
            return error_response(400, "value", str(error))
        await record({"fingerprint": mark}, "ok")
        return JSONResponse({"name": name, "fingerprint": mark})

    return [Route("/api/schedule", schedule, methods=["GET"]),
            Route("/api/warm/credentials", credentials, methods=["GET"]),
            Route("/api/warm/credentials/{name}", credential, methods=["PUT", "DELETE"]),
            Route("/api/warm", start, methods=["POST"]),
            Route("/api/warm", runs, methods=["GET"]),
            Route("/api/warm/{run_id}", one, methods=["GET"]),
            Route("/api/warm/{run_id}/map", url_map, methods=["GET"]),
            Route("/api/warm/{run_id}/cancel", cancel, methods=["POST"])]

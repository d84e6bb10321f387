"""The admin API of the job queue: what it holds, and dead jobs sent back.

Routes (behind :class:`~stoker.admin.guard.AdminGuard`):
- ``GET /api/jobs?limit=50&offset=0`` → counts by queue and state, the running jobs (owner,
  lease end, attempts; at most :data:`RUNNING_SHOWN`), and one page of dead jobs, most
  recently updated first, with their last error and the total.
- ``POST /api/jobs/requeue`` with exactly one of ``{"id": N | [N, ...]}``, ``{"key": "…"}``,
  ``{"run": N}`` (the dead jobs of warm run N) or ``{"all": true, "count": N}`` → 200
  ``{"requeued": n}``.

Invariants: ``all`` requeues only when ``count`` is the number of dead jobs now (the user
typed what they saw; 409 with the number now otherwise); an ``id`` that is not a dead job
is 409 and nothing is requeued; a malformed body is 400 naming the field; every requeue
call is audited (``requeue``: the scope, how many, the outcome).  With no warmer in this
process (no queue) every route answers 503, as ``/api/warm`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stoker.admin.api import MAX_BODY, actor_of, error_response, parse_json, read_limited
from stoker.jobs.model import Job, QueueCount, RequeueScope
from stoker.purge.audit import record_safely
from stoker.warm.warmer import RUN_FIELD

if TYPE_CHECKING:  # the assembly is above the admin layer: its types only
    from stoker.admin.facade import RunningWarmer
    from stoker.jobs.queue import JobQueue

RUNNING_SHOWN: Final = 100
MAX_PAGE: Final = 200
SCOPES: Final = ("id", "key", "run", "all")


def job_json(job: Job) -> dict[str, Any]:
    """One job as the API shows it (its lease token left out: it acts on the job)."""
    return {"id": job.id, "queue": job.queue, "key": job.dedupe_key, "payload": job.payload,
            "state": job.state, "attempts": job.attempts, "max_attempts": job.max_attempts,
            "owner": job.lease_owner, "lease_until": job.lease_until,
            "last_error": job.last_error, "run_at": job.run_at,
            "created_at": job.created_at, "updated_at": job.updated_at}


def parse_requeue(data: Any) -> tuple[RequeueScope, int | None]:
    """The scope a requeue body names, and for ``all`` the count the user confirmed;
    :class:`ValueError` naming the field otherwise.  Pure."""
    if not isinstance(data, dict):
        raise ValueError("body: expected a JSON object")
    given = [name for name in SCOPES if name in data]
    unknown = sorted(set(data) - {*SCOPES, "count"})
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown field (known: {', '.join(SCOPES)}, count)")
    if len(given) != 1:
        raise ValueError(f"body: give exactly one of {', '.join(SCOPES)}")
    kind, value = given[0], data[given[0]]
    if kind == "id":
        ids = value if isinstance(value, list) else [value]
        if not ids or not all(_whole(one) for one in ids):
            raise ValueError("id: expected a job id or a non-empty list of them")
        return RequeueScope.by_ids(*ids), None
    if kind == "key":
        if not isinstance(value, str) or not value:
            raise ValueError("key: expected a dedupe key")
        return RequeueScope.by_key(value), None
    if kind == "run":
        if not _whole(value):
            raise ValueError("run: expected a warm run id")
        return RequeueScope.by_payload(RUN_FIELD, value), None
    count = data.get("count")
    if value is not True or not _whole(count):
        raise ValueError("count: requeueing every dead job needs \"all\": true and \"count\": "
                         "the number of dead jobs, as a confirmation")
    return RequeueScope.all(confirm=True), count


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def dead_in(counts: Sequence[QueueCount]) -> int:
    """How many jobs ``counts`` say are dead, over every queue.  Pure."""
    return sum(count.count for count in counts if count.state == "dead")


def counts_json(counts: Sequence[QueueCount]) -> list[dict[str, Any]]:
    """The queue's counts by queue and state as the API and the status show them.  Pure."""
    return [{"queue": c.queue, "state": c.state, "count": c.count} for c in counts]


async def jobs_overview(queue: JobQueue, limit: int, offset: int) -> dict[str, Any]:
    """``GET /api/jobs``'s answer: counts by queue and state, the running jobs (at most
    :data:`RUNNING_SHOWN`) and the page of ``limit`` dead jobs from ``offset``."""
    counts = await queue.counts()
    dead = await queue.list("dead", limit, offset)
    running = await queue.list("running", RUNNING_SHOWN)
    return {"counts": counts_json(counts), "running": [job_json(job) for job in running],
            "dead": {"total": dead_in(counts), "offset": offset, "limit": limit,
                     "jobs": [job_json(job) for job in dead]}}


def jobs_routes(service: RunningWarmer | None) -> list[Route]:
    """The ``/api/jobs`` routes; 503s when this process has no warmer (and no queue)."""

    def unavailable() -> Response:
        return error_response(503, "jobs", "this Stoker runs no warmer, so no job queue: "
                              "start it with stoker serve (or stoker worker)")

    async def overview(request: Request) -> Response:
        if service is None:
            return unavailable()
        limit, offset = (request.query_params.get(name, default)
                         for name, default in (("limit", "50"), ("offset", "0")))
        if not limit.isdigit() or not 1 <= int(limit) <= MAX_PAGE or not offset.isdigit():
            return error_response(400, "limit", f"limit: 1 to {MAX_PAGE}; offset: 0 or more")
        return JSONResponse(await jobs_overview(service.stores.queue, int(limit), int(offset)))

    async def requeue(request: Request) -> Response:
        if service is None:
            return unavailable()
        queue, audit = service.stores.queue, service.stoker.audit

        async def record(target: dict[str, Any], count: int | None, outcome: str) -> None:
            await record_safely(audit, actor=actor_of(request), action="requeue",
                                target=target, count=count, outcome=outcome)

        body = await read_limited(request, MAX_BODY)
        try:
            data = parse_json(body) if body else None
        except ValueError:
            data = None
        try:
            scope, confirmed = parse_requeue(data)
        except ValueError as error:
            await record({"error": str(error)}, None, "invalid")
            return error_response(400, str(error).split(":")[0], str(error))
        target = {"kind": scope.kind, "ids": list(scope.job_ids), "key": scope.key,
                  "run": scope.field_value}
        refused = await _refusal(queue, scope, confirmed)
        if refused is not None:
            await record(target, None, "refused")
            return JSONResponse(refused, status_code=409)
        revived = await queue.requeue(scope)
        await record(target, revived, "ok")
        return JSONResponse({"requeued": revived})

    return [Route("/api/jobs", overview, methods=["GET"]),
            Route("/api/jobs/requeue", requeue, methods=["POST"])]


async def _refusal(queue: JobQueue, scope: RequeueScope,
                   confirmed: int | None) -> dict[str, Any] | None:
    """Why the requeue of ``scope`` is refused (409's body), or None."""
    if scope.kind == "all":
        now = dead_in(await queue.counts())
        if confirmed != now:
            return {"error": f"count: {now} jobs are dead now, not {confirmed}: nothing "
                             "requeued; confirm the number again", "field": "count",
                    "dead": now}
        return None
    for job_id in scope.job_ids:
        job = await queue.get(job_id)
        if job is None or job.state != "dead":
            state = "no such job" if job is None else f"{job.state}, not dead"
            return {"error": f"id: job {job_id} is {state}: nothing requeued", "field": "id"}
    return None

"""The PostgreSQL ``RunStore``: warm runs shared by every node on one database.

Lifecycle: ``store = PostgresRunStore(db)`` over a
:class:`~stoker.backends.postgres.database.PostgresHandle` (the migrated database or one
of its transactions); ``await store.aclose()`` closes ``db`` only when the store ``owns`` it.

Invariants (beyond those of :mod:`stoker.warm.run_store`):
- Every method is one transaction. Those that change a run lock its row first
  (``SELECT ... FOR UPDATE``), so concurrent records of one run serialise and
  never lose a count; ``create`` first takes a transaction-scoped advisory lock,
  so two nodes starting runs at once decide one after the other.
- Lock order is always advisory lock, run row, URL rows: no deadlocks.
- Decisions are the pure functions of :mod:`stoker.warm.run`; this module only
  reads the rows they need and writes what they return.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from stoker.backends.postgres.connection import lock_key
from stoker.backends.postgres.database import PostgresHandle
from stoker.warm import run as machine
from stoker.warm.run import (
    DEFAULT_POLICY,
    Reason,
    Recorded,
    Result,
    RevisitPolicy,
    Run,
    UrlState,
    UrlStateName,
)
from stoker.warm.run_store import (
    MAX_FAILURES,
    RUN_COLUMNS,
    Collected,
    Created,
    check_limit,
    check_state,
    check_urls,
    grouped,
    run_from_row,
    run_values,
    skipped_rows,
    update_statement,
    url_state_from_row,
)

_CREATE_LOCK: Final = lock_key("runs:create")

_SELECT: Final = f"SELECT {RUN_COLUMNS} FROM warm_runs"
_ACTIVE: Final = f"{_SELECT} WHERE phase IN ('collect', 'warm')"
_ACTIVE_LOCKED: Final = f"{_ACTIVE} FOR UPDATE"
_BY_ID: Final = f"{_SELECT} WHERE id = $1"
_BY_ID_LOCKED: Final = f"{_BY_ID} FOR UPDATE"
_RECENT: Final = f"{_SELECT} ORDER BY id DESC LIMIT $1"
_INSERT: Final = f"""
INSERT INTO warm_runs (reason, scope, phase, started_at) VALUES ($1, $2, $3, $4)
RETURNING {RUN_COLUMNS}
"""
_UPDATE: Final = update_statement(lambda n: f"${n}")
_STATES: Final = """
SELECT url, state, visit, revisits, detail FROM warm_run_urls
WHERE run_id = $1 AND url = ANY($2::text[])
FOR UPDATE
"""
_OPEN_URLS: Final = """
SELECT url FROM warm_run_urls WHERE run_id = $1 AND state IN ('queued', 'stopgap') ORDER BY url
"""
_UPSERT_URLS: Final = """
INSERT INTO warm_run_urls (run_id, url, state, visit, revisits, detail)
SELECT $1, * FROM unnest($2::text[], $3::text[], $4::int[], $5::int[], $6::text[])
ON CONFLICT (run_id, url) DO UPDATE
SET state = excluded.state, visit = excluded.visit, revisits = excluded.revisits,
    detail = excluded.detail
"""
_URLS_IN_STATE: Final = """
SELECT url FROM warm_run_urls WHERE run_id = $1 AND state = $2 ORDER BY url LIMIT $3
"""
_LAST_FAILURES: Final = """
SELECT url, detail FROM (
  SELECT u.url, u.state, u.detail, u.run_id,
         row_number() OVER (PARTITION BY u.url ORDER BY u.run_id DESC) AS n
  FROM warm_run_urls u JOIN warm_runs r ON r.id = u.run_id
  WHERE r.started_at >= $1
    AND (u.state NOT IN ('queued', 'stopgap') OR r.phase IN ('collect', 'warm'))) AS settled
WHERE n = 1 AND state = 'failed' ORDER BY run_id DESC, url LIMIT $2
"""
_NOT_STORED_REASONS: Final = """
SELECT coalesce(detail, '') AS reason, count(*) AS urls FROM warm_run_urls
WHERE run_id = $1 AND state = 'not_stored'
GROUP BY 1 ORDER BY 2 DESC, coalesce(detail, '') COLLATE "C"
"""
_INSERT_SKIPPED: Final = """
INSERT INTO warm_run_skipped (run_id, reason, count)
SELECT $1, * FROM unnest($2::text[], $3::int[])
ON CONFLICT (run_id, reason) DO UPDATE SET count = excluded.count
"""
_SKIPPED_REASONS: Final = """
SELECT reason, count FROM warm_run_skipped WHERE run_id = $1
ORDER BY count DESC, reason COLLATE "C"
"""
_NOT_STORED_URLS: Final = """
SELECT reason, url FROM (
  SELECT coalesce(detail, '') AS reason, url,
         row_number() OVER (PARTITION BY coalesce(detail, '') ORDER BY url) AS n
  FROM warm_run_urls WHERE run_id = $1 AND state = 'not_stored') AS ranked
WHERE n <= $2 ORDER BY reason, url
"""


async def _one(conn: Any, statement: str, *args: object) -> Run | None:
    row = await conn.fetchrow(statement, *args)
    return None if row is None else run_from_row(row)


async def _states(conn: Any, run_id: int, urls: Sequence[str]) -> dict[str, UrlState]:
    rows = await conn.fetch(_STATES, run_id, list(urls))
    return dict(map(url_state_from_row, rows))


async def _write(conn: Any, run: Run, changes: Mapping[str, UrlState]) -> None:
    await conn.execute(_UPDATE, *run_values(run))
    if changes:
        states = list(changes.values())
        await conn.execute(_UPSERT_URLS, run.id, list(changes),
                           [s.state for s in states], [s.visit for s in states],
                           [s.revisits for s in states], [s.detail for s in states])


async def _merge(conn: Any, run: Run, urls: Sequence[str], now: float,
                 *, reopen: bool) -> machine.Added:
    added = machine.add_urls(run, await _states(conn, run.id, urls), urls, now, reopen=reopen)
    await _write(conn, added.run, added.changes)
    return added


async def _start(conn: Any, reason: Reason, urls: Sequence[str] | None, now: float,
                 active: Run | None) -> Created:
    """Cancel ``active`` (if any), insert the new run, carry over and add URLs."""
    if active is not None:
        await _write(conn, machine.cancel(active, now) or active, {})
    scope: machine.Scope = "site" if urls is None else "urls"
    fresh = machine.new_run(0, reason, scope, now)
    row = await conn.fetchrow(_INSERT, reason, scope, fresh.phase, now)
    run = run_from_row(row)
    cancelled = None
    carried: list[str] = []
    if active is not None:
        cancelled = machine.supersede(active, run, now)
        await _write(conn, cancelled, {})
        if active.scope == "urls":
            carried = [r["url"] for r in await conn.fetch(_OPEN_URLS, active.id)]
    added = await _merge(conn, run, [*carried, *(urls or ())], now, reopen=False)
    outcome: Literal["started", "superseded"] = "started" if cancelled is None else "superseded"
    return Created(added.run, outcome, added.visits, cancelled)


class PostgresRunStore:
    """``RunStore`` on a PostgreSQL pool (see the module invariants)."""

    def __init__(self, db: PostgresHandle, policy: RevisitPolicy = DEFAULT_POLICY, *,
                 owns: bool = False) -> None:
        self._db = db
        self._policy = policy
        self._owns = owns


    async def create(self, reason: Reason, urls: Sequence[str] | None, now: float, *,
                     replace: bool = True) -> Created:
        check_urls(urls)
        async with self._db.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _CREATE_LOCK)
            active = await _one(conn, _ACTIVE_LOCKED)
            plan = machine.plan_create(active, "site" if urls is None else "urls",
                                       replace=replace)
            if plan == "busy" and active is not None:
                return Created(active, "busy", [])
            if plan == "merge" and active is not None and urls is not None:
                added = await _merge(conn, active, urls, now, reopen=True)
                return Created(added.run, "merged", added.visits)
            return await _start(conn, reason, urls, now, active)

    async def get(self, run_id: int) -> Run | None:
        return await _one(self._db.executor, _BY_ID, run_id)

    async def recent(self, limit: int = 20) -> list[Run]:
        rows = await self._db.executor.fetch(_RECENT, check_limit(limit))
        return [run_from_row(row) for row in rows]

    async def active(self) -> Run | None:
        return await _one(self._db.executor, _ACTIVE)

    async def claim_collect(self, run_id: int, owner: str, now: float) -> bool:
        async with self._db.acquire() as conn, conn.transaction():
            run = await _one(conn, _BY_ID_LOCKED, run_id)
            claimed = None if run is None else machine.claim_collect(run, owner, now)
            if claimed is not None:
                await _write(conn, claimed, {})
            return claimed is not None

    async def collect_failed(self, run_id: int, owner: str, error: str) -> Run | None:
        async with self._db.acquire() as conn, conn.transaction():
            run = await _one(conn, _BY_ID_LOCKED, run_id)
            failed = None if run is None else machine.collect_failed(run, owner, error)
            if failed is not None:
                await _write(conn, failed, {})
            return failed

    async def last_failures(self, since: float, limit: int = MAX_FAILURES
                            ) -> list[tuple[str, str | None]]:
        rows = await self._db.executor.fetch(_LAST_FAILURES, since, max(1, limit))
        return [(row["url"], row["detail"]) for row in rows]

    async def set_total(self, run_id: int, owner: str, urls: Sequence[str], now: float, *,
                        skipped: Mapping[str, int] | None = None) -> Collected | None:
        rows = skipped_rows(skipped)
        async with self._db.acquire() as conn, conn.transaction():
            run = await _one(conn, _BY_ID_LOCKED, run_id)
            if run is None:
                return None
            existing = await _states(conn, run_id, urls)
            added = machine.collected(run, owner, existing, urls,
                                      sum(count for _, count in rows), now)
            if added is None:
                return None
            await _write(conn, added.run, added.changes)
            if rows:
                await conn.execute(_INSERT_SKIPPED, run_id, [reason for reason, _ in rows],
                                   [count for _, count in rows])
            return Collected(added.run, added.visits)

    async def record(self, run_id: int, url: str, visit: int, result: Result,
                     now: float, *, detail: str | None = None) -> Recorded:
        async with self._db.acquire() as conn, conn.transaction():
            run = await _one(conn, _BY_ID_LOCKED, run_id)
            if run is None:
                raise LookupError(f"no warm run {run_id}")
            state = (await _states(conn, run_id, [url])).get(url)
            recorded = machine.record(run, url, state, visit, result, now, self._policy,
                                      detail=detail)
            if recorded.counted and recorded.url is not None:
                await _write(conn, recorded.run, {url: recorded.url})
            return recorded

    async def finish(self, run_id: int, phase: Literal["done", "failed"], now: float,
                     error: str | None = None) -> Run | None:
        return await self._end(run_id, phase, now, error)

    async def cancel(self, run_id: int, now: float) -> Run | None:
        return await self._end(run_id, "cancelled", now, None)

    async def urls(self, run_id: int, state: UrlStateName, limit: int = 100) -> list[str]:
        rows = await self._db.executor.fetch(_URLS_IN_STATE, run_id, check_state(state),
                                      check_limit(limit))
        return [row["url"] for row in rows]

    async def skipped_reasons(self, run_id: int) -> dict[str, int]:
        rows = await self._db.executor.fetch(_SKIPPED_REASONS, run_id)
        return {row["reason"]: row["count"] for row in rows}

    async def not_stored_reasons(self, run_id: int) -> dict[str, int]:
        rows = await self._db.executor.fetch(_NOT_STORED_REASONS, run_id)
        return {row["reason"]: row["urls"] for row in rows}

    async def not_stored_urls(self, run_id: int, each: int = 5) -> dict[str, list[str]]:
        rows = await self._db.executor.fetch(_NOT_STORED_URLS, run_id, each)
        return grouped((row["reason"], row["url"]) for row in rows)

    async def aclose(self) -> None:
        if self._owns:
            await self._db.close()

    async def _end(self, run_id: int, phase: Literal["done", "failed", "cancelled"],
                   now: float, error: str | None) -> Run | None:
        async with self._db.acquire() as conn, conn.transaction():
            run = await _one(conn, _BY_ID_LOCKED, run_id)
            if run is None:
                return None
            ended = (machine.cancel(run, now) if phase == "cancelled"
                     else machine.finish(run, phase, now, error))
            if ended is not None:
                await _write(conn, ended, {})
            return ended

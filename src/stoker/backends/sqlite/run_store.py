"""The SQLite ``RunStore``: warm runs in the local database file.

Lifecycle: ``store = SqliteRunStore(db)`` over a
:class:`~stoker.backends.sqlite.database.SqliteDatabase` (or one of its transactions);
``await store.aclose()`` closes ``db`` only when the store ``owns`` it.

Invariants (beyond those of :mod:`stoker.warm.run_store`):
- Every call runs on the handle's thread owning its only connection, so the
  event loop never blocks on SQLite; every write is one ``BEGIN IMMEDIATE``
  transaction (a savepoint of the unit of work it is called in), so processes
  sharing the file serialise whole read-decide-write steps and never interleave them.
- Decisions are the pure functions of :mod:`stoker.warm.run`; this module only
  reads the rows they need and writes what they return.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Literal

from stoker.backends.sqlite.connection import immediate, json_array
from stoker.backends.sqlite.database import SqliteHandle
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

_SELECT: Final = f"SELECT {RUN_COLUMNS} FROM warm_runs"
_ACTIVE: Final = f"{_SELECT} WHERE phase IN ('collect', 'warm')"
_BY_ID: Final = f"{_SELECT} WHERE id = ?"
_RECENT: Final = f"{_SELECT} ORDER BY id DESC LIMIT ?"
_INSERT: Final = "INSERT INTO warm_runs (reason, scope, phase, started_at) VALUES (?, ?, ?, ?)"
_UPDATE: Final = update_statement(lambda _: "?")
_STATES: Final = """
SELECT url, state, visit, revisits, detail FROM warm_run_urls
WHERE run_id = ? AND url IN (SELECT value FROM json_each(?))
"""
_OPEN_URLS: Final = """
SELECT url FROM warm_run_urls WHERE run_id = ? AND state IN ('queued', 'stopgap') ORDER BY url
"""
_UPSERT_URL: Final = """
INSERT INTO warm_run_urls (run_id, url, state, visit, revisits, detail) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (run_id, url) DO UPDATE
SET state = excluded.state, visit = excluded.visit, revisits = excluded.revisits,
    detail = excluded.detail
"""
_URLS_IN_STATE: Final = """
SELECT url FROM warm_run_urls WHERE run_id = ? AND state = ? ORDER BY url LIMIT ?
"""
_LAST_FAILURES: Final = """
SELECT url, detail FROM (
  SELECT u.url, u.state, u.detail, u.run_id,
         row_number() OVER (PARTITION BY u.url ORDER BY u.run_id DESC) AS n
  FROM warm_run_urls u JOIN warm_runs r ON r.id = u.run_id
  WHERE r.started_at >= ?
    AND (u.state NOT IN ('queued', 'stopgap') OR r.phase IN ('collect', 'warm'))) AS settled
WHERE n = 1 AND state = 'failed' ORDER BY run_id DESC, url LIMIT ?
"""
_NOT_STORED_REASONS: Final = """
SELECT coalesce(detail, ''), count(*) FROM warm_run_urls
WHERE run_id = ? AND state = 'not_stored'
GROUP BY 1 ORDER BY 2 DESC, 1
"""
_INSERT_SKIPPED: Final = """
INSERT INTO warm_run_skipped (run_id, reason, count) VALUES (?, ?, ?)
ON CONFLICT (run_id, reason) DO UPDATE SET count = excluded.count
"""
_SKIPPED_REASONS: Final = """
SELECT reason, count FROM warm_run_skipped WHERE run_id = ? ORDER BY count DESC, reason
"""
_NOT_STORED_URLS: Final = """
SELECT reason, url FROM (
  SELECT coalesce(detail, '') AS reason, url,
         row_number() OVER (PARTITION BY coalesce(detail, '') ORDER BY url) AS n
  FROM warm_run_urls WHERE run_id = ? AND state = 'not_stored')
WHERE n <= ? ORDER BY reason, url
"""


def _one(conn: sqlite3.Connection, statement: str, *params: object) -> Run | None:
    row = conn.execute(statement, params).fetchone()
    return None if row is None else run_from_row(row)


def _states(conn: sqlite3.Connection, run_id: int, urls: Iterable[str]) -> dict[str, UrlState]:
    rows = conn.execute(_STATES, (run_id, json_array(urls))).fetchall()
    return dict(map(url_state_from_row, rows))


def _write(conn: sqlite3.Connection, run: Run, changes: Mapping[str, UrlState]) -> None:
    conn.execute(_UPDATE, run_values(run))
    conn.executemany(_UPSERT_URL, [(run.id, url, s.state, s.visit, s.revisits, s.detail)
                                   for url, s in changes.items()])


def _merge(conn: sqlite3.Connection, run: Run, urls: Sequence[str], now: float,
           *, reopen: bool) -> machine.Added:
    added = machine.add_urls(run, _states(conn, run.id, urls), urls, now, reopen=reopen)
    _write(conn, added.run, added.changes)
    return added


def _start(conn: sqlite3.Connection, reason: Reason, urls: Sequence[str] | None,
           now: float, active: Run | None) -> Created:
    """Cancel ``active`` (if any), insert the new run, carry over and add URLs."""
    if active is not None:
        _write(conn, machine.cancel(active, now) or active, {})
    scope: machine.Scope = "site" if urls is None else "urls"
    fresh = machine.new_run(0, reason, scope, now)
    cursor = conn.execute(_INSERT, (reason, scope, fresh.phase, now))
    run = dataclasses.replace(fresh, id=int(cursor.lastrowid or 0))
    cancelled = None
    carried: list[str] = []
    if active is not None:
        cancelled = machine.supersede(active, run, now)
        _write(conn, cancelled, {})
        if active.scope == "urls":
            carried = [row[0] for row in conn.execute(_OPEN_URLS, (active.id,))]
    added = _merge(conn, run, [*carried, *(urls or ())], now, reopen=False)
    outcome: Literal["started", "superseded"] = "started" if cancelled is None else "superseded"
    return Created(added.run, outcome, added.visits, cancelled)


def _create(conn: sqlite3.Connection, reason: Reason, urls: Sequence[str] | None, now: float,
            replace: bool) -> Created:
    with immediate(conn):
        active = _one(conn, _ACTIVE)
        plan = machine.plan_create(active, "site" if urls is None else "urls", replace=replace)
        if plan == "busy" and active is not None:
            return Created(active, "busy", [])
        if plan == "merge" and active is not None and urls is not None:
            added = _merge(conn, active, urls, now, reopen=True)
            return Created(added.run, "merged", added.visits)
        return _start(conn, reason, urls, now, active)


def _claim(conn: sqlite3.Connection, run_id: int, owner: str, now: float) -> bool:
    with immediate(conn):
        run = _one(conn, _BY_ID, run_id)
        claimed = None if run is None else machine.claim_collect(run, owner, now)
        if claimed is not None:
            _write(conn, claimed, {})
        return claimed is not None


def _collect_failed(conn: sqlite3.Connection, run_id: int, owner: str,
                    error: str) -> Run | None:
    with immediate(conn):
        run = _one(conn, _BY_ID, run_id)
        failed = None if run is None else machine.collect_failed(run, owner, error)
        if failed is not None:
            _write(conn, failed, {})
        return failed


def _set_total(conn: sqlite3.Connection, run_id: int, owner: str, urls: Sequence[str],
               now: float, skipped: Sequence[tuple[str, int]]) -> Collected | None:
    with immediate(conn):
        run = _one(conn, _BY_ID, run_id)
        if run is None:
            return None
        added = machine.collected(run, owner, _states(conn, run_id, urls), urls,
                                  sum(count for _, count in skipped), now)
        if added is None:
            return None
        _write(conn, added.run, added.changes)
        conn.executemany(_INSERT_SKIPPED, [(run_id, reason, count) for reason, count in skipped])
        return Collected(added.run, added.visits)


def _record(conn: sqlite3.Connection, run_id: int, url: str, visit: int, result: Result,
            now: float, policy: RevisitPolicy, detail: str | None) -> Recorded:
    with immediate(conn):
        run = _one(conn, _BY_ID, run_id)
        if run is None:
            raise LookupError(f"no warm run {run_id}")
        state = _states(conn, run_id, [url]).get(url)
        recorded = machine.record(run, url, state, visit, result, now, policy, detail=detail)
        if recorded.counted and recorded.url is not None:
            _write(conn, recorded.run, {url: recorded.url})
        return recorded


def _end(conn: sqlite3.Connection, run_id: int, phase: Literal["done", "failed", "cancelled"],
         now: float, error: str | None) -> Run | None:
    with immediate(conn):
        run = _one(conn, _BY_ID, run_id)
        if run is None:
            return None
        ended = (machine.cancel(run, now) if phase == "cancelled"
                 else machine.finish(run, phase, now, error))
        if ended is not None:
            _write(conn, ended, {})
        return ended


class SqliteRunStore:
    """``RunStore`` on a SQLite file (see the module invariants)."""

    def __init__(self, db: SqliteHandle, policy: RevisitPolicy = DEFAULT_POLICY, *,
                 owns: bool = False) -> None:
        self._db = db
        self._policy = policy
        self._owns = owns

    async def create(self, reason: Reason, urls: Sequence[str] | None, now: float, *,
                     replace: bool = True) -> Created:
        check_urls(urls)
        return await self._db.run(lambda conn: _create(conn, reason, urls, now, replace))

    async def get(self, run_id: int) -> Run | None:
        return await self._db.run(lambda conn: _one(conn, _BY_ID, run_id))

    async def recent(self, limit: int = 20) -> list[Run]:
        rows = await self._db.run(
            lambda conn: conn.execute(_RECENT, (check_limit(limit),)).fetchall())
        return [run_from_row(row) for row in rows]

    async def active(self) -> Run | None:
        return await self._db.run(lambda conn: _one(conn, _ACTIVE))

    async def claim_collect(self, run_id: int, owner: str, now: float) -> bool:
        return await self._db.run(lambda conn: _claim(conn, run_id, owner, now))

    async def set_total(self, run_id: int, owner: str, urls: Sequence[str], now: float, *,
                        skipped: Mapping[str, int] | None = None) -> Collected | None:
        rows = skipped_rows(skipped)
        return await self._db.run(
            lambda conn: _set_total(conn, run_id, owner, urls, now, rows))

    async def record(self, run_id: int, url: str, visit: int, result: Result,
                     now: float, *, detail: str | None = None) -> Recorded:
        return await self._db.run(
            lambda conn: _record(conn, run_id, url, visit, result, now, self._policy, detail))

    async def finish(self, run_id: int, phase: Literal["done", "failed"], now: float,
                     error: str | None = None) -> Run | None:
        return await self._db.run(lambda conn: _end(conn, run_id, phase, now, error))

    async def cancel(self, run_id: int, now: float) -> Run | None:
        return await self._db.run(lambda conn: _end(conn, run_id, "cancelled", now, None))

    async def collect_failed(self, run_id: int, owner: str, error: str) -> Run | None:
        return await self._db.run(lambda conn: _collect_failed(conn, run_id, owner, error))

    async def last_failures(self, since: float, limit: int = MAX_FAILURES
                            ) -> list[tuple[str, str | None]]:
        rows = await self._db.run(
            lambda conn: conn.execute(_LAST_FAILURES, (since, max(1, limit))).fetchall())
        return [(row[0], row[1]) for row in rows]

    async def urls(self, run_id: int, state: UrlStateName, limit: int = 100) -> list[str]:
        rows = await self._db.run(lambda conn: conn.execute(
            _URLS_IN_STATE, (run_id, check_state(state), check_limit(limit))).fetchall())
        return [row[0] for row in rows]

    async def skipped_reasons(self, run_id: int) -> dict[str, int]:
        rows = await self._db.run(
            lambda conn: conn.execute(_SKIPPED_REASONS, (run_id,)).fetchall())
        return dict(rows)

    async def not_stored_reasons(self, run_id: int) -> dict[str, int]:
        rows = await self._db.run(
            lambda conn: conn.execute(_NOT_STORED_REASONS, (run_id,)).fetchall())
        return dict(rows)

    async def not_stored_urls(self, run_id: int, each: int = 5) -> dict[str, list[str]]:
        rows = await self._db.run(
            lambda conn: conn.execute(_NOT_STORED_URLS, (run_id, each)).fetchall())
        return grouped(rows)

    async def aclose(self) -> None:
        if self._owns:
            await self._db.close()

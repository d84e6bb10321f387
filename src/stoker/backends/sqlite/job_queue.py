"""The SQLite ``JobQueue`` backend: one database file shared by every local process.

Invariants (beyond those of ``stoker.jobs.queue``):
- All blocking sqlite work runs on the thread of the queue's
  :class:`~stoker.backends.sqlite.database.SqliteHandle` (the database or one of
  its transactions), so the event loop never waits on the file; the connection
  is used by that thread only.  ``aclose`` closes the handle only when the queue
  ``owns`` it.
- Writes run under ``BEGIN IMMEDIATE``: the write lock is taken up front, so
  two processes leasing at once serialise instead of both reading the same
  due rows (the busy timeout makes the second one wait, not fail).
- Workers wake on an in-process signal when a queue object in this process
  enqueues to the same file, and poll at most every ``poll_interval`` seconds
  for work from other processes and for delayed jobs coming due.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from stoker.backends.sqlite import job_sql as sql
from stoker.backends.sqlite.connection import immediate, json_array
from stoker.backends.sqlite.database import SqliteHandle
from stoker.clock import Clock
from stoker.jobs.model import (
    EXPIRED_ERROR,
    Job,
    JobState,
    Lease,
    NewJob,
    QueueCount,
    RequeueScope,
    job_from_row,
    payload_json,
    payload_path,
)
from stoker.jobs.policy import RetryDecision
from stoker.jobs.queue import (
    check_lease_args,
    check_scope,
    in_lease_order,
    record_failure,
    wait_for_wakeup,
    warn_lost,
)

DEFAULT_POLL_INTERVAL = 1.0
T = TypeVar("T")

# Queue objects by database file, so an enqueue wakes local workers at once.
_LOCAL: dict[str, weakref.WeakSet[SqliteJobQueue]] = {}


def _held_params(lease: Lease, **extra: object) -> dict[str, object]:
    return {"id": lease.job_id, "token": lease.token, **extra}


def _update_each(
    conn: sqlite3.Connection, statement: str, leases: Sequence[Lease], **extra: object
) -> frozenset[int]:
    """Run a lease-guarded UPDATE per lease in one transaction; ids it changed."""
    held: set[int] = set()
    with immediate(conn):
        for lease in leases:
            if conn.execute(statement, _held_params(lease, **extra)).rowcount == 1:
                held.add(lease.job_id)
    return frozenset(held)


def _insert(conn: sqlite3.Connection, jobs: Sequence[NewJob], now: float) -> int:
    rows = [
        (job.queue, job.dedupe_key, payload_json(job.payload), job.priority,
         now if job.run_at is None else job.run_at, job.max_attempts, now, now)
        for job in jobs
    ]
    with immediate(conn):
        before = conn.total_changes
        conn.executemany(sql.INSERT, rows)
        return conn.total_changes - before


def _rows(conn: sqlite3.Connection, statement: str, params: dict[str, object]) -> list[Any]:
    """The rows of ``statement``, addressable by column name."""
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    rows: list[Any] = cursor.execute(statement, params).fetchall()
    return rows


def _lease(conn: sqlite3.Connection, params: dict[str, object]) -> list[Job]:
    with immediate(conn):
        rows = _rows(conn, sql.LEASE, params)
    return [job for job in map(job_from_row, rows) if job.state == "running"]


def _requeue_params(scope: RequeueScope, now: float) -> dict[str, object]:
    params: dict[str, object] = {"now": now}
    if scope.kind == "id":
        params["ids"] = json_array(scope.job_ids)
    elif scope.kind == "key":
        params["key"] = scope.key
    elif scope.kind == "payload" and scope.field_name is not None:
        params["path"] = payload_path(scope.field_name)
        params["value"] = scope.field_value
    return params


def _write(conn: sqlite3.Connection, statement: str, params: dict[str, object]) -> int:
    with immediate(conn):
        return conn.execute(statement, params).rowcount


class SqliteJobQueue:
    """``JobQueue`` on a SQLite file (see module invariants)."""

    def __init__(
        self,
        db: SqliteHandle,
        clock: Clock,
        *,
        rng: Callable[[], float] = random.random,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        owns: bool = False,
    ) -> None:
        self._path = str(db.path.resolve())
        self._db = db
        self._owns = owns
        self._clock = clock
        self._rng = rng
        self._poll_interval = poll_interval
        self._loop = asyncio.get_running_loop()
        self._wakeups: dict[str, asyncio.Event] = {}
        _LOCAL.setdefault(self._path, weakref.WeakSet()).add(self)

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await self._db.run(lambda conn: fn(conn, *args, **kwargs))

    async def enqueue(self, jobs: Sequence[NewJob]) -> int:
        if not jobs:
            return 0
        added = await self._run(_insert, jobs, self._clock.now())
        if added:
            self._signal({job.queue for job in jobs})
        return added

    async def lease(self, queue: str, n: int, owner: str, ttl: float) -> list[Job]:
        check_lease_args(n, ttl)
        now = self._clock.now()
        params: dict[str, object] = {
            "queue": queue, "n": n, "owner": owner, "now": now, "until": now + ttl,
            "expired_error": EXPIRED_ERROR,
        }
        return in_lease_order(await self._run(_lease, params))

    async def heartbeat(self, leases: Sequence[Lease], ttl: float) -> frozenset[int]:
        until = self._clock.now() + ttl
        held = await self._run(_update_each, sql.HEARTBEAT, leases, until=until)
        warn_lost("heartbeat", leases, held)
        return held

    async def ack_done(self, lease: Lease) -> bool:
        return lease.job_id in await self.ack_done_many([lease])

    async def ack_done_many(self, leases: Sequence[Lease]) -> frozenset[int]:
        now = self._clock.now()
        held = await self._run(_update_each, sql.ACK_DONE, leases, now=now)
        warn_lost("ack_done", leases, held)
        return held

    async def ack_failed(self, lease: Lease, error: str) -> bool:
        return await record_failure(self, lease, error, self._clock.now(), self._rng())

    async def attempts_of(self, lease: Lease) -> tuple[int, int] | None:
        rows = await self._run(_rows, sql.ATTEMPTS_OF, _held_params(lease))
        return (int(rows[0][0]), int(rows[0][1])) if rows else None

    async def apply_failure(self, lease: Lease, decision: RetryDecision, now: float) -> bool:
        params = _held_params(
            lease, state="dead" if decision.dead else "pending", run_at=decision.run_at,
            error=decision.error, now=now,
        )
        changed: int = await self._run(_write, sql.APPLY_FAILURE, params)
        return changed == 1

    async def release(self, lease: Lease) -> bool:
        held = await self._run(_update_each, sql.RELEASE, [lease], now=self._clock.now())
        warn_lost("release", [lease], held)
        return bool(held)

    async def requeue(self, scope: RequeueScope) -> int:
        check_scope(scope)
        params = _requeue_params(scope, self._clock.now())
        revived = await self._run(_write, sql.REQUEUE[scope.kind], params)
        if revived:
            self._signal(None)
        return revived

    async def reap(self, older_than: float) -> int:
        return await self._run(_write, sql.REAP, {"before": self._clock.now() - older_than})

    async def counts(self) -> list[QueueCount]:
        rows = await self._run(_rows, sql.COUNTS, {})
        return [QueueCount(row["queue"], row["state"], int(row["n"])) for row in rows]

    async def list(self, state: JobState, limit: int = 50, offset: int = 0) -> Sequence[Job]:
        params: dict[str, object] = {"state": state, "limit": limit, "offset": offset}
        return [job_from_row(row) for row in await self._run(_rows, sql.LIST, params)]

    async def get(self, job_id: int) -> Job | None:
        rows = await self._run(_rows, sql.GET, {"id": job_id})
        return job_from_row(rows[0]) if rows else None

    async def wait_for_work(self, queue: str, timeout: float) -> bool:
        return await wait_for_wakeup(self._wakeups, queue, min(timeout, self._poll_interval))

    async def aclose(self) -> None:
        _LOCAL.get(self._path, weakref.WeakSet()).discard(self)
        if self._owns:
            await self._db.close()

    def _signal(self, queues: set[str] | None) -> None:
        for other in list(_LOCAL.get(self._path, ())):
            other._wake(queues)

    def _wake(self, queues: set[str] | None) -> None:
        """Thread-safe: wake this object's waiters on ``queues`` (``None``: all)."""

        def wake() -> None:
            for name in self._wakeups.keys() if queues is None else queues:
                self._wakeups.setdefault(name, asyncio.Event()).set()

        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(wake)

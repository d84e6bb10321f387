"""The PostgreSQL ``JobQueue`` backend, for several nodes sharing one database.

Invariants (beyond those of ``stoker.jobs.queue``):
- Every operation is one statement (one round trip, its own transaction),
  except ``ack_failed`` (read attempts, decide in Python, write guarded by the
  lease token: a lease lost in between makes the write change nothing).
- ``lease`` locks candidates with ``FOR UPDATE SKIP LOCKED``: concurrent
  lessees on any node skip each other's rows instead of waiting or sharing.
- ``enqueue`` and ``requeue`` ``NOTIFY`` the queues that got work, in the
  same transaction (delivered on commit); ``wait_for_work`` ``LISTEN``s on a
  connection held for that alone, so idle workers do not poll the table.  When that
  connection dies (the server restarted), every waiter is woken (what was notified
  meanwhile is lost: they look at the table) and the next wait listens on a new one.
- Statements run on the :class:`~stoker.backends.postgres.database.PostgresHandle`'s
  executor (inside a unit of work: its connection, where the ``NOTIFY`` is delivered
  when it commits); ``aclose`` closes the handle only when the queue ``owns`` it.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from typing import Any

import asyncpg

from stoker.backends.postgres import job_sql as sql
from stoker.backends.postgres.database import PostgresHandle
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

_REQUEUE_RETRIES = 3


def _insert_args(jobs: Sequence[NewJob], now: float) -> tuple[Any, ...]:
    return (
        [job.queue for job in jobs],
        [job.dedupe_key for job in jobs],
        [payload_json(job.payload) for job in jobs],
        [job.priority for job in jobs],
        [now if job.run_at is None else job.run_at for job in jobs],
        [job.max_attempts for job in jobs],
        now,
        sql.CHANNEL,
    )


def _lease_columns(leases: Sequence[Lease]) -> tuple[list[int], list[str]]:
    return [lease.job_id for lease in leases], [lease.token for lease in leases]


def _scope_args(scope: RequeueScope) -> tuple[Any, ...]:
    if scope.kind == "id":
        return (list(scope.job_ids),)
    if scope.kind == "key":
        return (scope.key,)
    if scope.kind == "payload":
        return (scope.field_name, scope.field_value)
    return ()


class PostgresJobQueue:
    """``JobQueue`` on a PostgreSQL pool (see module invariants)."""

    def __init__(
        self, db: PostgresHandle, clock: Clock, *,
        rng: Callable[[], float] = random.random, owns: bool = False,
    ) -> None:
        self._db = db
        self._clock = clock
        self._rng = rng
        self._owns = owns
        self._listener: Any = None
        self._listen_lock = asyncio.Lock()
        self._wakeups: dict[str, asyncio.Event] = {}

    async def enqueue(self, jobs: Sequence[NewJob]) -> int:
        if not jobs:
            return 0
        rows = await self._db.executor.fetch(sql.INSERT, *_insert_args(jobs, self._clock.now()))
        return sum(int(row["added"]) for row in rows)

    async def lease(self, queue: str, n: int, owner: str, ttl: float) -> list[Job]:
        check_lease_args(n, ttl)
        now = self._clock.now()
        rows = await self._db.executor.fetch(sql.LEASE, queue, n, now, owner, now + ttl,
                                             EXPIRED_ERROR)
        jobs = [job for job in map(job_from_row, rows) if job.state == "running"]
        return in_lease_order(jobs)

    async def heartbeat(self, leases: Sequence[Lease], ttl: float) -> frozenset[int]:
        held = await self._update_held(sql.HEARTBEAT, leases, self._clock.now() + ttl)
        warn_lost("heartbeat", leases, held)
        return held

    async def ack_done(self, lease: Lease) -> bool:
        return lease.job_id in await self.ack_done_many([lease])

    async def ack_done_many(self, leases: Sequence[Lease]) -> frozenset[int]:
        held = await self._update_held(sql.ACK_DONE, leases, self._clock.now())
        warn_lost("ack_done", leases, held)
        return held

    async def ack_failed(self, lease: Lease, error: str) -> bool:
        return await record_failure(self, lease, error, self._clock.now(), self._rng())

    async def attempts_of(self, lease: Lease) -> tuple[int, int] | None:
        row = await self._db.executor.fetchrow(sql.ATTEMPTS_OF, lease.job_id, lease.token)
        return None if row is None else (int(row["attempts"]), int(row["max_attempts"]))

    async def apply_failure(self, lease: Lease, decision: RetryDecision, now: float) -> bool:
        state = "dead" if decision.dead else "pending"
        changed = await self._db.executor.fetchval(
            sql.APPLY_FAILURE, lease.job_id, lease.token, state, decision.run_at,
            decision.error, now,
        )
        return changed is not None

    async def release(self, lease: Lease) -> bool:
        changed = await self._db.executor.fetchval(
            sql.RELEASE, lease.job_id, lease.token, self._clock.now()
        )
        if changed is None:
            warn_lost("release", [lease], ())
        return changed is not None

    async def requeue(self, scope: RequeueScope) -> int:
        check_scope(scope)
        args = (self._clock.now(), sql.CHANNEL, *_scope_args(scope))
        for attempt in range(_REQUEUE_RETRIES):
            try:
                rows = await self._db.executor.fetch(sql.REQUEUE[scope.kind], *args)
            except asyncpg.UniqueViolationError:
                # A producer enqueued the same key meanwhile; the retry skips that key.
                if attempt == _REQUEUE_RETRIES - 1:
                    raise
                continue
            return sum(int(row["added"]) for row in rows)
        return 0

    async def reap(self, older_than: float) -> int:
        status = await self._db.executor.execute(sql.REAP, self._clock.now() - older_than)
        return int(str(status).rsplit(" ", 1)[-1])

    async def counts(self) -> list[QueueCount]:
        rows = await self._db.executor.fetch(sql.COUNTS)
        return [QueueCount(row["queue"], row["state"], int(row["n"])) for row in rows]

    async def list(self, state: JobState, limit: int = 50, offset: int = 0) -> Sequence[Job]:
        rows = await self._db.executor.fetch(sql.LIST, state, limit, offset)
        return [job_from_row(row) for row in rows]

    async def get(self, job_id: int) -> Job | None:
        row = await self._db.executor.fetchrow(sql.GET, job_id)
        return None if row is None else job_from_row(row)

    async def wait_for_work(self, queue: str, timeout: float) -> bool:
        await self._listen()
        return await wait_for_wakeup(self._wakeups, queue, timeout)

    async def aclose(self) -> None:
        if self._listener is not None:
            listener, self._listener = self._listener, None
            await listener.remove_listener(sql.CHANNEL, self._on_notify)
            await self._db.pool.release(listener)
        if self._owns:
            await self._db.close()

    async def _update_held(
        self, statement: str, leases: Sequence[Lease], when: float
    ) -> frozenset[int]:
        if not leases:
            return frozenset()
        ids, tokens = _lease_columns(leases)
        rows = await self._db.executor.fetch(statement, ids, tokens, when)
        return frozenset(int(row["id"]) for row in rows)

    async def _listen(self) -> None:
        async with self._listen_lock:
            if self._listener is None:
                listener = await self._db.pool.acquire()
                try:
                    await listener.add_listener(sql.CHANNEL, self._on_notify)
                except BaseException:
                    await self._db.pool.release(listener)
                    raise
                listener.add_termination_listener(self._on_listener_lost)
                self._listener = listener

    def _on_listener_lost(self, _conn: object) -> None:
        """The listening connection died (the pool has taken it back): wake every waiter
        and listen anew at the next wait (see the module invariants)."""
        self._listener = None
        for event in self._wakeups.values():
            event.set()

    def _on_notify(self, _conn: object, _pid: int, _channel: str, queue: object) -> None:
        self._wakeups.setdefault(str(queue), asyncio.Event()).set()

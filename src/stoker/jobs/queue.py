"""The ``JobQueue`` port, implemented by the SQLite and PostgreSQL backends.

Every backend passes the same contract suite (``tests/contract/test_job_queue.py``).

Invariants every implementation keeps:
- ``enqueue`` is one transaction; per ``(queue, dedupe_key)`` at most one job
  is ``pending`` or ``running`` at a time. A duplicate of a ``pending`` job is
  dropped; a duplicate of a ``running`` job asks for one more run after it
  (however many duplicates arrive meanwhile): when that run ends ``done`` or
  ``dead``, the same job is enqueued again as a fresh ``pending`` job, due at
  once. A failed attempt that is retried, or a released job, is that run.
- ``lease`` hands each due job to exactly one caller: ``pending`` jobs whose
  ``run_at`` has come, in ``(priority, run_at, id)`` order, and ``running``
  jobs whose lease expired (reclaimed first). Each lease gets a fresh token and
  counts one attempt; an expired job already out of attempts goes ``dead``.
- ``ack_done``, ``ack_failed``, ``release`` and ``heartbeat`` act only on a job
  still ``running`` under the quoted token; otherwise they change nothing,
  report ``False`` (or leave it out of the result) and log a warning.
- ``requeue`` revives ``dead`` jobs only, at most one per dedupe key, and never
  one whose key already has a pending or running job.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from typing import Protocol

from stoker.jobs.model import Job, JobState, Lease, NewJob, QueueCount, RequeueScope
from stoker.jobs.policy import RetryDecision, decide_retry

log = logging.getLogger("stoker.jobs")


class JobQueue(Protocol):
    """A durable, leased job queue."""

    async def enqueue(self, jobs: Sequence[NewJob]) -> int:
        """Insert ``jobs`` in one transaction; return how many were new or asked a rerun."""

    async def lease(self, queue: str, n: int, owner: str, ttl: float) -> Sequence[Job]:
        """Take up to ``n`` due jobs of ``queue`` for ``ttl`` seconds, held by ``owner``."""

    async def heartbeat(self, leases: Sequence[Lease], ttl: float) -> frozenset[int]:
        """Extend these leases to now + ``ttl``; return the ids still held (others were lost)."""

    async def ack_done(self, lease: Lease) -> bool:
        """Mark the job done; ``False`` (and no change) when the lease is no longer held."""

    async def ack_done_many(self, leases: Sequence[Lease]) -> frozenset[int]:
        """Mark these jobs done in one transaction; return the ids that were still held."""

    async def ack_failed(self, lease: Lease, error: str) -> bool:
        """Record a failed attempt: retry later with backoff, or ``dead`` when out of attempts."""

    async def release(self, lease: Lease) -> bool:
        """Give the job back unstarted: ``pending`` again, the attempt not counted."""

    async def requeue(self, scope: RequeueScope) -> int:
        """Send dead jobs in ``scope`` back to ``pending`` with fresh attempts; return how many."""

    async def reap(self, older_than: float) -> int:
        """Delete ``done`` jobs finished more than ``older_than`` seconds ago; return how many."""

    async def counts(self) -> Sequence[QueueCount]:
        """Job counts by queue and state (states with no jobs are left out)."""

    async def list(self, state: JobState, limit: int = 50, offset: int = 0) -> Sequence[Job]:
        """Jobs in ``state``, most recently updated first."""

    async def get(self, job_id: int) -> Job | None:
        """One job by id."""

    async def wait_for_work(self, queue: str, timeout: float) -> bool:
        """Wait until work may have arrived on ``queue`` or ``timeout`` passed; ``True``: woken."""

    async def aclose(self) -> None:
        """Release connections and threads."""


def warn_lost(operation: str, leases: Iterable[Lease], held: Iterable[int]) -> None:
    """Log every lease that ``operation`` found no longer held (a late or stolen ack)."""
    kept = set(held)
    for lease in leases:
        if lease.job_id not in kept:
            log.warning(
                "%s ignored: job %d is no longer running under lease %s (reclaimed or acked)",
                operation, lease.job_id, lease.token[:8],
            )


def check_lease_args(n: int, ttl: float) -> None:
    """Refuse a lease request that cannot make sense."""
    if n < 1:
        raise ValueError(f"lease size must be at least 1, got {n}")
    if ttl <= 0:
        raise ValueError(f"lease ttl must be positive, got {ttl}")


def check_scope(scope: RequeueScope) -> None:
    """``all`` must carry its confirmation even when built by hand."""
    if scope.kind == "all" and not scope.confirmed:
        raise ValueError("requeueing every dead job needs an explicit confirm")


def in_lease_order(jobs: Iterable[Job]) -> list[Job]:
    """Jobs in the order the queue promises: ``(priority, run_at, id)``."""
    return sorted(jobs, key=lambda job: (job.priority, job.run_at, job.id))


async def wait_for_wakeup(wakeups: dict[str, asyncio.Event], queue: str, timeout: float) -> bool:
    """Wait for ``queue``'s event in ``wakeups`` (set by a notification) or ``timeout``.

    ``True`` when woken; the event is cleared, so one wakeup is consumed once.
    """
    event = wakeups.setdefault(queue, asyncio.Event())
    if not event.is_set():
        try:
            async with asyncio.timeout(timeout):
                await event.wait()
        except TimeoutError:
            return False
    event.clear()
    return True


class FailureStore(Protocol):
    """The two backend steps of ``ack_failed``; the decision between them is shared."""

    async def attempts_of(self, lease: Lease) -> tuple[int, int] | None:
        """``(attempts, max_attempts)`` of the job if still held under ``lease``."""

    async def apply_failure(self, lease: Lease, decision: RetryDecision, now: float) -> bool:
        """Write ``decision`` if the job is still held under ``lease``."""


async def record_failure(
    store: FailureStore, lease: Lease, error: str, now: float, rng_value: float
) -> bool:
    """Read the attempt count, decide retry-or-dead, write it guarded by the lease token."""
    attempts = await store.attempts_of(lease)
    applied = False
    if attempts is not None:
        decision = decide_retry(attempts[0], attempts[1], error, now, rng_value)
        applied = await store.apply_failure(lease, decision, now)
    if not applied:
        warn_lost("ack_failed", [lease], ())
    return applied

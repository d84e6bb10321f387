"""The worker: lease jobs, run their handler with a timeout, heartbeat, ack.

Invariants:
- A job is acked only by the task that ran it and only while its lease is
  held; when a heartbeat finds a lease lost (taken over after expiry), the
  worker cancels that run and never acks it.
- At most ``concurrency`` handlers run at once and at most ``2 * concurrency``
  jobs are leased (the rest wait in the buffer: prefetch); every leased job is
  heartbeated every ``heartbeat_interval`` (a third of the lease by default).
- While the circuit breaker is open the worker leases nothing; when it opens,
  the buffered (unstarted) jobs are released for others; after the cooldown
  one probe job decides whether it closes again.
- Every leased job's ending reaches the breaker exactly once: a result
  (success, failure, timeout) via ``on_result``, anything else (lease lost
  while buffered or running, cancelled, released, an unexpected exception)
  via ``on_abandoned``; so a lost probe cannot leave the breaker half-open.
- Graceful shutdown releases every leased job not started, lets running ones
  finish for ``shutdown_grace`` seconds, then cancels and releases the rest.
- :meth:`Worker.run_batch` is one bounded round without the loop (a process whose
  traffic drives its work): it leases at most its ``limit`` (the breaker permitting),
  runs them ``concurrency`` at once with heartbeats, records each ending as the loop
  does, and returns; cancelled, it releases what it holds as a shutdown does.
- An idle worker sleeps in ``JobQueue.wait_for_work`` (LISTEN/NOTIFY or the
  in-process signal), waking at least every ``poll_interval`` seconds.
- A queue that does not answer (its database down or restarting) loses no result:
  the job's ending is written again, at the pace of :mod:`stoker.resilience.outage` (at most
  ``poll_interval`` apart), until the queue takes it or the job is lost or cancelled;
  leasing and waiting for work are retried at that pace too.  A handler failure the
  queue could not take at once is taken for the queue's (the handler most likely
  failed on the same database): the job is released instead (run again, that attempt
  not counted) and the breaker hears of it as abandoned, so an outage of the database
  neither opens the breaker nor uses up attempts.  An outage is logged when it starts,
  every ``SAY_EVERY`` seconds while it lasts and when it ends, not at every try.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from stoker.clock import Clock
from stoker.jobs.model import Job
from stoker.jobs.queue import JobQueue
from stoker.resilience import breaker, outage
from stoker.resilience.breaker import BreakerState

log = logging.getLogger("stoker.jobs.worker")

Handler = Callable[[Job], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """How one worker consumes one queue."""

    queue: str
    concurrency: int = 4
    lease_ttl: float = 30.0
    heartbeat_interval: float | None = None
    job_timeout: float = 60.0
    poll_interval: float = 5.0
    shutdown_grace: float = 10.0
    breaker: BreakerState = field(default_factory=BreakerState)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"worker concurrency must be at least 1, got {self.concurrency}")
        if self.job_timeout <= 0 or self.lease_ttl <= 0:
            raise ValueError("worker job_timeout and lease_ttl must be positive")

    @property
    def heartbeat_every(self) -> float:
        return self.heartbeat_interval or self.lease_ttl / 3


@dataclass(slots=True)
class WorkerStats:
    """What a worker has done since it started."""

    done: int = 0
    failed: int = 0
    lost: int = 0
    released: int = 0


def default_owner() -> str:
    """A lease owner name that tells operators which process holds a job."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Worker:
    """Runs ``handler`` for jobs of one queue until stopped (see module invariants)."""

    def __init__(
        self, queue: JobQueue, handler: Handler, clock: Clock, config: WorkerConfig,
        *, owner: str | None = None,
    ) -> None:
        self._queue = queue
        self._handler = handler
        self._clock = clock
        self._config = config
        self.owner = owner or default_owner()
        self.breaker = config.breaker
        self.stats = WorkerStats()
        self._buffer: deque[Job] = deque()
        self._running: dict[int, tuple[Job, asyncio.Task[None]]] = {}
        self._lost: set[int] = set()
        self._writing: set[int] = set()
        """Jobs whose ending is being written (their heartbeats stop)."""
        self._outage = outage.Outage()

    async def run(self, stop: asyncio.Event) -> None:
        """Work until ``stop`` is set, then shut down gracefully."""
        with contextlib.suppress(Exception):  # subscribe before leasing; retried when idle
            await self._queue.wait_for_work(self._config.queue, 0)
        beats = asyncio.create_task(self._heartbeat_loop())
        stopping = asyncio.create_task(stop.wait())
        try:
            while not stop.is_set():
                await self._fill()
                self._start_ready()
                await self._wait(stopping)
        finally:
            beats.cancel()
            stopping.cancel()
            await self._shutdown()

    async def run_batch(self, limit: int) -> int:
        """Lease at most ``limit`` jobs, run them and record their endings (see the module
        invariants); how many were leased."""
        if self._buffer or self._running:
            raise RuntimeError("run_batch: this worker is already running jobs")
        await self._fill(limit)
        leased = len(self._buffer)
        if not leased:
            return 0
        beats = asyncio.create_task(self._heartbeat_loop())
        try:
            while self._buffer or self._running:
                self._start_ready()
                await asyncio.wait([task for _, task in self._running.values()],
                                   return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await self._shutdown()
            raise
        finally:
            beats.cancel()
        return leased

    async def _fill(self, limit: int | None = None) -> None:
        """Lease when the buffer is empty, up to one running batch plus one waiting batch
        (``limit``: at most that many)."""
        now = self._clock.now()
        room = 2 * self._config.concurrency - len(self._running)
        if limit is not None:
            room = min(room, limit)
        if self._buffer or room < 1 or not breaker.may_lease(self.breaker, now):
            return
        n = breaker.lease_limit(self.breaker, room)
        try:
            jobs = await self._queue.lease(self._config.queue, n, self.owner,
                                           self._config.lease_ttl)
        except Exception as error:
            self._queue_failed("leasing", error)
            return
        self._queue_answered()
        if jobs and self.breaker.phase != "closed":
            self.breaker = breaker.on_probe(self.breaker, now, jobs[0].id)
        self._buffer.extend(jobs)

    def _start_ready(self) -> None:
        while self._buffer and len(self._running) < self._config.concurrency:
            job = self._buffer.popleft()
            task = asyncio.create_task(self._execute(job), name=f"job-{job.id}")
            self._running[job.id] = (job, task)

    async def _wait(self, stopping: asyncio.Task[bool]) -> None:
        """Sleep until a run ends, work may have arrived, the breaker reopens, or stop."""
        waiters: set[asyncio.Future[Any]] = {stopping}
        waiters.update(task for _, task in self._running.values())
        wake: asyncio.Task[bool] | None = None
        timeout: float | None = None
        now = self._clock.now()
        if self.breaker.phase == "open":
            timeout = breaker.seconds_until_probe(self.breaker, now) or None
        if timeout is None and not self._buffer:
            wake = asyncio.create_task(self._wait_for_work())
            waiters.add(wake)
        if timeout is None and wake is None and len(waiters) == 1:
            timeout = self._config.poll_interval
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if wake is not None and not wake.done():
            wake.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await wake

    async def _wait_for_work(self) -> bool:
        """Like ``JobQueue.wait_for_work``, but a failing database means a full poll wait."""
        try:
            return await self._queue.wait_for_work(self._config.queue, self._config.poll_interval)
        except Exception as error:
            self._queue_failed("waiting for work", error)
            await asyncio.sleep(self._retry_in())
            return False

    async def _execute(self, job: Job) -> None:
        recording = False
        try:
            error = await self._call_handler(job)
            if job.id not in self._lost:
                recording = True
                self._writing.add(job.id)
                await self._record(job, error)
        finally:
            self._running.pop(job.id, None)
            self._lost.discard(job.id)
            self._writing.discard(job.id)
            if not recording:
                self._abandon(job)

    async def _call_handler(self, job: Job) -> str | None:
        try:
            async with asyncio.timeout(self._config.job_timeout):
                await self._handler(job)
        except TimeoutError:
            return f"timed out after {self._config.job_timeout:g}s"
        except asyncio.CancelledError:
            if job.id in self._lost:
                return "lease lost"
            raise
        except Exception as exc:
            log.warning("job %d on %r failed: %r", job.id, job.queue, exc)
            return f"{type(exc).__name__}: {exc}"
        return None

    async def _record(self, job: Job, error: str | None) -> None:
        """Write ``job``'s ending and tell the breaker, once each (see the module
        invariants: a failure the queue cannot take at once becomes a release)."""
        if error is None:
            await self._judge(job, ok=True)
            acked = await self._written(lambda: self._queue.ack_done(job.lease))
            self.stats.done += acked  # not ``+= await``: that reads the count before waiting
            return
        try:
            await self._queue.ack_failed(job.lease, error)
        except Exception as failure:
            self._abandon(job)
            self._queue_failed(f"recording the failure of job {job.id}", failure)
            released = await self._written(lambda: self._queue.release(job.lease))
            self.stats.released += released
            return
        except BaseException:
            self._abandon(job)
            raise
        self._queue_answered()
        self.stats.failed += 1
        await self._judge(job, ok=False)

    async def _judge(self, job: Job, *, ok: bool) -> None:
        """Tell the breaker ``job``'s result; when that opens it, release the buffer."""
        was_open = self.breaker.phase == "open"
        self.breaker = breaker.on_result(self.breaker, job.id, ok, self._clock.now())
        if self.breaker.phase == "open" and not was_open:
            log.warning("circuit breaker opened on queue %r after %d consecutive failures",
                        job.queue, self.breaker.failures)
            await self._release_buffer()

    async def _written(self, write: Callable[[], Awaitable[bool]]) -> int:
        """``write()`` again until the queue answers; 1 when it took the write, else 0
        (the lease was lost meanwhile)."""
        while True:
            try:
                took = await write()
            except Exception as error:
                self._queue_failed("writing a job's result", error)
                await asyncio.sleep(self._retry_in())
                continue
            self._queue_answered()
            return int(took)

    def _queue_failed(self, doing: str, error: Exception) -> None:
        """Count a failure of the queue; log it as :mod:`stoker.resilience.outage` says."""
        self._outage, say = outage.failed(self._outage, self._clock.monotonic())
        if say:
            log.warning("queue %r: %s failed (%s: %s); results are kept and leasing paused, "
                        "retried until the queue answers", self._config.queue, doing,
                        type(error).__name__, error)

    def _queue_answered(self) -> None:
        self._outage, back = outage.answered(self._outage)
        if back:
            log.info("queue %r answers again", self._config.queue)

    def _retry_in(self) -> float:
        return outage.retry_in(self._outage, self._config.poll_interval)

    def _abandon(self, job: Job) -> None:
        """``job`` ended without a result; if it was the breaker's probe, probe again."""
        self.breaker = breaker.on_abandoned(self.breaker, job.id)

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self._config.heartbeat_every)
            await self._heartbeat_once()

    async def _heartbeat_once(self) -> None:
        jobs = list(self._buffer) + [
            job for job, _ in self._running.values()
            if job.id not in self._lost and job.id not in self._writing]
        if not jobs:
            return
        try:
            held = await self._queue.heartbeat([job.lease for job in jobs],
                                               self._config.lease_ttl)
        except Exception as error:
            self._queue_failed("a heartbeat (leases may expire)", error)
            return
        self._queue_answered()
        for job in jobs:
            if job.id not in held:
                self._drop_lost(job)

    def _drop_lost(self, job: Job) -> None:
        """Forget a job whose lease is gone; one that finished meanwhile (its ack raced
        the heartbeat) is not ours to drop and does not count as lost."""
        entry = self._running.get(job.id)
        if job in self._buffer:
            self._buffer.remove(job)
            self._abandon(job)
        elif entry is not None and job.id not in self._writing:
            self._lost.add(job.id)
            entry[1].cancel()
        else:
            return
        self.stats.lost += 1

    async def _release_buffer(self) -> None:
        while self._buffer:
            job = self._buffer.popleft()
            self._abandon(job)
            with contextlib.suppress(Exception):
                released = await self._queue.release(job.lease)
                self.stats.released += released

    async def _shutdown(self) -> None:
        await self._release_buffer()
        tasks = [task for _, task in self._running.values()]
        if tasks:
            await asyncio.wait(tasks, timeout=self._config.shutdown_grace)
        for job, task in list(self._running.values()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            with contextlib.suppress(Exception):
                released = await self._queue.release(job.lease)
                self.stats.released += released
        self._running.clear()

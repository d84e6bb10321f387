"""The ``JobQueue`` contract: one suite, run against SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
import functools
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from tests.conftest import running
from tests.job_backends import BACKENDS, open_queue, pg_schema, place

from stoker.clock import FakeClock
from stoker.jobs.model import EXPIRED_ERROR, Job, Lease, NewJob, RequeueScope
from stoker.jobs.policy import backoff_ceiling
from stoker.jobs.queue import JobQueue
from stoker.jobs.worker import Handler, Worker, WorkerConfig
from stoker.resilience.breaker import BreakerState

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def pg_test_schema() -> Iterator[str]:
    with pg_schema() as schema:
        yield schema


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def target(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return place(backend, tmp_path, request, "pg_test_schema", "jobs.db")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def queue(backend: str, target: str, clock: FakeClock) -> AsyncIterator[JobQueue]:
    q = await open_queue(backend, target, clock, truncate=True, rng=lambda: 0.5)
    yield q
    await q.aclose()


async def lease_one(queue: JobQueue, name: str = "q", owner: str = "w1",
                    ttl: float = 30) -> Job:
    jobs = await queue.lease(name, 1, owner, ttl)
    assert len(jobs) == 1
    return jobs[0]


async def dead_job(queue: JobQueue, clock: FakeClock, **fields: object) -> int:
    """Enqueue a one-attempt job and fail it so it is dead; return its id."""
    await queue.enqueue([NewJob("q", max_attempts=1, **fields)])  # type: ignore[arg-type]
    job = await lease_one(queue)
    assert await queue.ack_failed(job.lease, "boom")
    return job.id


# --- enqueue and dedupe -------------------------------------------------------

async def test_enqueue_reports_new_jobs_and_dedupes_in_flight_keys(queue: JobQueue) -> None:
    jobs = [NewJob("q", {"n": n}, dedupe_key=f"k{n % 2}") for n in range(4)]
    assert await queue.enqueue(jobs) == 2
    again = [NewJob("q", dedupe_key="k0"), NewJob("other", dedupe_key="k0")]
    assert await queue.enqueue(again) == 1
    job = await lease_one(queue)
    assert await queue.ack_done(job.lease)
    assert await queue.enqueue([NewJob("q", dedupe_key=job.dedupe_key)]) == 1  # slot freed
    assert await queue.enqueue([NewJob("q"), NewJob("q")]) == 2  # no key: never deduped


async def test_a_payload_comes_back_as_enqueued(queue: JobQueue) -> None:
    payload = {"url": "https://example.com/caf\u00e9?q=\"x\"&y=\\", "big": 2**53 + 1,
               "share": 0.1, "nested": {"a": [1, None, True, "\u2603"]}}
    assert await queue.enqueue([NewJob("q", payload, dedupe_key="caf\u00e9")]) == 1
    job = await lease_one(queue)
    assert (job.payload, job.dedupe_key) == (payload, "caf\u00e9")


async def test_duplicates_while_running_ask_for_exactly_one_more_run(
        queue: JobQueue) -> None:
    await queue.enqueue([NewJob("q", {"page": "/"}, dedupe_key="/", priority=3)])
    first = await lease_one(queue)
    assert await queue.enqueue([NewJob("q", dedupe_key="/")]) == 1  # rerun requested
    assert await queue.enqueue([NewJob("q", dedupe_key="/"), NewJob("q", dedupe_key="/")]) == 0
    assert await queue.enqueue([NewJob("q", dedupe_key="/")]) == 0  # already requested
    assert await queue.lease("q", 5, "w2", 30) == []  # never beside the running one
    assert await queue.ack_done(first.lease)
    again = await lease_one(queue)
    assert again.id != first.id
    assert (again.dedupe_key, again.payload, again.priority, again.attempts) == (
        "/", {"page": "/"}, 3, 1)
    assert await queue.ack_done(again.lease)
    assert await queue.lease("q", 5, "w2", 30) == []  # one follow-up, not one per duplicate
    assert [(c.state, c.count) for c in await queue.counts()] == [("done", 2)]


async def test_rerun_follows_a_dead_run_but_a_retry_or_release_is_the_rerun(
        queue: JobQueue, clock: FakeClock) -> None:
    await queue.enqueue([NewJob("q", dedupe_key="k", max_attempts=2)])
    job = await lease_one(queue)
    await queue.enqueue([NewJob("q", dedupe_key="k")])
    assert await queue.release(job.lease)  # back to pending: it runs again anyway
    job = await lease_one(queue)
    await queue.enqueue([NewJob("q", dedupe_key="k")])
    assert await queue.ack_failed(job.lease, "first")  # the retry is the run after
    clock.advance(3_600)
    job = await lease_one(queue)
    assert job.attempts == 2
    await queue.enqueue([NewJob("q", dedupe_key="k")])
    assert await queue.ack_failed(job.lease, "second")  # dead: the follow-up still runs
    follow_up = await lease_one(queue)
    assert follow_up.id != job.id and follow_up.attempts == 1
    assert await queue.ack_done(follow_up.lease)
    assert await queue.lease("q", 5, "w", 30) == []
    assert {(c.state, c.count) for c in await queue.counts()} == {("dead", 1), ("done", 1)}


async def test_rerun_survives_a_reclaimed_lease_and_a_burial(
        queue: JobQueue, clock: FakeClock) -> None:
    await queue.enqueue([NewJob("q", dedupe_key="k", max_attempts=2)])
    await lease_one(queue, owner="dies", ttl=5)
    await queue.enqueue([NewJob("q", dedupe_key="k")])
    clock.advance(6)
    reclaimed = await lease_one(queue, owner="dies-too", ttl=5)  # keeps the request
    clock.advance(6)
    assert await queue.lease("q", 1, "w", 30) == []  # out of attempts: buried
    follow_up = await lease_one(queue, owner="w")
    assert follow_up.id != reclaimed.id and follow_up.attempts == 1
    buried = await queue.get(reclaimed.id)
    assert buried is not None and buried.state == "dead"


async def test_concurrent_enqueue_of_one_key_keeps_one_job(
        backend: str, target: str, queue: JobQueue, clock: FakeClock) -> None:
    other = await open_queue(backend, target, clock)
    try:
        batches = [[NewJob("d", {"i": i}, dedupe_key="same")] for i in range(16)]
        added = await asyncio.gather(
            *(q.enqueue(b) for q, b in zip([queue, other] * 8, batches, strict=True)))
    finally:
        await other.aclose()
    assert sum(added) == 1
    assert [(c.queue, c.state, c.count) for c in await queue.counts()] == [("d", "pending", 1)]


# --- lease ---------------------------------------------------------------------

async def test_lease_order_is_priority_then_run_at_then_fifo(
        queue: JobQueue, clock: FakeClock) -> None:
    now = clock.now()
    await queue.enqueue([
        NewJob("q", {"name": "late"}, priority=0, run_at=now - 1),
        NewJob("q", {"name": "fifo-1"}, priority=0, run_at=now - 5),
        NewJob("q", {"name": "fifo-2"}, priority=0, run_at=now - 5),
        NewJob("q", {"name": "urgent"}, priority=-1),
        NewJob("q", {"name": "background"}, priority=5, run_at=now - 100),
        NewJob("q", {"name": "future"}, run_at=now + 60),
        NewJob("elsewhere", {"name": "other queue"}),
    ])
    names = [job.payload["name"] for job in await queue.lease("q", 10, "w1", 300)]
    assert names == ["urgent", "fifo-1", "fifo-2", "late", "background"]
    clock.advance(61)
    assert [j.payload["name"] for j in await queue.lease("q", 10, "w1", 30)] == ["future"]


async def test_lease_sets_lease_fields_and_counts_an_attempt(
        queue: JobQueue, clock: FakeClock) -> None:
    await queue.enqueue([NewJob("q", {"a": [1, "x"]}) for _ in range(3)])
    jobs = await queue.lease("q", 2, "worker-a", 30)
    assert len(jobs) == 2 and len({job.lease_token for job in jobs}) == 2
    for job in jobs:
        assert (job.state, job.attempts, job.lease_owner) == ("running", 1, "worker-a")
        assert job.lease_until == pytest.approx(clock.now() + 30)
        assert job.payload == {"a": [1, "x"]}
    assert len(await queue.lease("q", 5, "worker-b", 30)) == 1
    assert await queue.lease("q", 5, "worker-b", 30) == []
    with pytest.raises(ValueError, match="at least 1"):
        await queue.lease("q", 0, "worker-b", 30)


async def test_expired_lease_is_reclaimed_and_late_acks_change_nothing(
        queue: JobQueue, clock: FakeClock) -> None:
    await queue.enqueue([NewJob("q")])
    first = await lease_one(queue, owner="slow")
    clock.advance(29)
    assert await queue.lease("q", 1, "fast", 30) == []  # still held
    clock.advance(2)
    second = await lease_one(queue, owner="fast")
    assert second.id == first.id and second.lease_token != first.lease_token
    assert second.attempts == 2
    before = await queue.get(first.id)
    assert not await queue.ack_done(first.lease)
    assert not await queue.ack_failed(first.lease, "late failure")
    assert not await queue.release(first.lease)
    assert await queue.heartbeat([first.lease], 30) == frozenset()
    assert await queue.get(first.id) == before
    assert await queue.ack_done(second.lease)
    done = await queue.get(first.id)
    assert done is not None and done.state == "done"


async def test_heartbeat_extends_the_lease(queue: JobQueue, clock: FakeClock) -> None:
    await queue.enqueue([NewJob("q")])
    job = await lease_one(queue, ttl=10)
    clock.advance(8)
    assert await queue.heartbeat([job.lease], 10) == frozenset({job.id})
    clock.advance(8)
    assert await queue.lease("q", 1, "thief", 10) == []
    assert await queue.ack_done(job.lease)


async def test_expired_job_out_of_attempts_goes_dead(queue: JobQueue, clock: FakeClock) -> None:
    await queue.enqueue([NewJob("q", max_attempts=1)])
    job = await lease_one(queue, ttl=5)
    clock.advance(6)
    assert await queue.lease("q", 1, "w2", 5) == []
    buried = await queue.get(job.id)
    assert buried is not None and (buried.state, buried.last_error) == ("dead", EXPIRED_ERROR)


async def test_release_returns_the_job_without_counting_the_attempt(queue: JobQueue) -> None:
    await queue.enqueue([NewJob("q")])
    job = await lease_one(queue)
    assert await queue.release(job.lease)
    again = await lease_one(queue)
    assert again.id == job.id and again.attempts == 1


# --- failures, backoff, dead letters ------------------------------------------

@pytest.mark.parametrize("attempt", [1, 2, 3])
async def test_ack_failed_retries_after_jittered_backoff(
        queue: JobQueue, clock: FakeClock, attempt: int) -> None:
    await queue.enqueue([NewJob("q", max_attempts=10)])
    for _ in range(attempt):
        job = await lease_one(queue)
        assert await queue.ack_failed(job.lease, f"failure {job.attempts}")
        clock.advance(3_600)
    stored = await queue.get(job.id)
    assert stored is not None and stored.state == "pending"
    assert stored.attempts == attempt and stored.last_error == f"failure {attempt}"
    failed_at = clock.now() - 3_600
    assert stored.run_at == pytest.approx(failed_at + 0.5 * backoff_ceiling(attempt))


async def test_ack_failed_on_last_attempt_is_dead(queue: JobQueue) -> None:
    await queue.enqueue([NewJob("q", max_attempts=1)])
    job = await lease_one(queue)
    assert await queue.ack_failed(job.lease, "x" * 10_000)
    dead = await queue.get(job.id)
    assert dead is not None and dead.state == "dead"
    assert dead.last_error is not None and len(dead.last_error) <= 2_000


async def test_requeue_by_id(queue: JobQueue, clock: FakeClock) -> None:
    first = await dead_job(queue, clock)
    await dead_job(queue, clock)
    assert await queue.requeue(RequeueScope.by_ids(first, 999_999)) == 1
    revived = await queue.get(first)
    assert revived is not None and (revived.state, revived.attempts) == ("pending", 0)
    assert [job.state for job in await queue.list("dead")] == ["dead"]


async def test_requeue_by_key_revives_one_of_several_dead_rows(
        queue: JobQueue, clock: FakeClock) -> None:
    await dead_job(queue, clock, dedupe_key="page")
    newest = await dead_job(queue, clock, dedupe_key="page")
    assert await queue.requeue(RequeueScope.by_key("page")) == 1
    assert await queue.requeue(RequeueScope.by_key("page")) == 0  # one is in flight already
    revived = await queue.get(newest)
    assert revived is not None and revived.state == "pending"


async def test_requeue_by_payload_field(queue: JobQueue, clock: FakeClock) -> None:
    await dead_job(queue, clock, payload={"run_id": 7, "url": "/a"})
    await dead_job(queue, clock, payload={"run_id": 7, "url": "/b"})
    await dead_job(queue, clock, payload={"run_id": 8, "url": "/c"})
    assert await queue.requeue(RequeueScope.by_payload("run_id", 7)) == 2
    assert [job.payload["url"] for job in await queue.list("dead")] == ["/c"]


async def test_requeue_all_needs_confirmation(queue: JobQueue, clock: FakeClock) -> None:
    await dead_job(queue, clock)
    await dead_job(queue, clock)
    with pytest.raises(ValueError, match="confirm"):
        RequeueScope.all(confirm=False)
    with pytest.raises(ValueError, match="confirm"):
        await queue.requeue(RequeueScope("all"))
    assert len(await queue.list("dead")) == 2
    assert await queue.requeue(RequeueScope.all(confirm=True)) == 2


# --- housekeeping and dashboard reads ---------------------------------------

async def test_reap_counts_and_list(queue: JobQueue, clock: FakeClock) -> None:
    await queue.enqueue([NewJob("a", {"n": n}) for n in range(3)] + [NewJob("b")])
    jobs = await queue.lease("a", 2, "w", 30)
    for job in jobs:
        clock.advance(1)
        assert await queue.ack_done(job.lease)
    counts = {(c.queue, c.state): c.count for c in await queue.counts()}
    assert counts == {("a", "done"): 2, ("a", "pending"): 1, ("b", "pending"): 1}
    listed = await queue.list("done", limit=1)
    assert [job.id for job in listed] == [jobs[1].id]  # most recently updated first
    assert [job.id for job in await queue.list("done", limit=5, offset=1)] == [jobs[0].id]
    clock.advance(100)
    assert await queue.reap(older_than=1_000) == 0
    assert await queue.reap(older_than=50) == 2
    assert await queue.list("done") == []


async def test_wait_for_work_wakes_on_enqueue(
        backend: str, target: str, clock: FakeClock) -> None:
    # No poll wakes this waiter early (SQLite polls every poll_interval): only the enqueue can.
    options = {"poll_interval": 3_600} if backend == "sqlite" else {}
    waiter = await open_queue(backend, target, clock, truncate=True, **options)
    producer = await open_queue(backend, target, clock)
    try:
        await waiter.wait_for_work("q", 0)  # subscribe
        waiting = asyncio.create_task(waiter.wait_for_work("q", 3_600))
        await asyncio.sleep(0)  # the waiter is waiting
        await producer.enqueue([NewJob("q")])
        assert await waiting
    finally:
        await producer.aclose()
        await waiter.aclose()


# --- several processes --------------------------------------------------------

# Each process, once it holds its first batch, waits until every process holds
# one (marker files next to ``go``): they overlap by construction, not by luck.
LEASER = """
import asyncio, json, os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from tests.job_backends import open_queue
from stoker.clock import SystemClock

async def main(backend, target, go, root, processes):
    q = await open_queue(backend, target, SystemClock())
    print("ready", flush=True)
    go = Path(go)
    while not go.exists():
        await asyncio.sleep(0.005)
    got, idle = [], 0
    while idle < 3:
        jobs = await q.lease("race", 7, "proc", 60)
        if not jobs:
            idle += 1
            await asyncio.sleep(0.01)
            continue
        if not got:
            (go.parent / f"holds-{os.getpid()}").touch()
            while len(list(go.parent.glob("holds-*"))) < int(processes):
                await asyncio.sleep(0.005)
        idle = 0
        got += [job.id for job in jobs]
        await q.ack_done_many([job.lease for job in jobs])
    await q.aclose()
    print(json.dumps(got), flush=True)

asyncio.run(main(*sys.argv[1:6]))
"""
PROCESSES = 3


async def test_processes_leasing_at_once_never_share_a_job(
        backend: str, target: str, queue: JobQueue, tmp_path: Path) -> None:
    await queue.enqueue([NewJob("race", {"n": n}) for n in range(300)])
    go = tmp_path / "go"
    argv = [sys.executable, "-c", LEASER, backend, target, str(go), str(REPO_ROOT),
            str(PROCESSES)]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) for _ in range(PROCESSES)]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        go.touch()
        outputs = [proc.communicate(timeout=60)[0] for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    per_process = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    every = [job_id for ids in per_process for job_id in ids]
    assert len(every) == len(set(every)) == 300
    assert all(per_process), "every process held a batch while the others held theirs"
    assert [(c.state, c.count) for c in await queue.counts()] == [("done", 300)]


# --- the worker on each backend ----------------------------------------------

async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll ``check`` until true; the bound only stops a hang, it is no performance claim."""
    for _ in range(1_500):
        if await check():
            return
        await asyncio.sleep(0.02)
    pytest.fail(f"never happened: {what}")


def state_count(queue: JobQueue, state: str, expected: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return sum(c.count for c in await queue.counts() if c.state == state) == expected
    return check


def make_worker(queue: JobQueue, clock: FakeClock, handler: Handler, **config: Any) -> Worker:
    return Worker(queue, handler, clock, WorkerConfig("q", poll_interval=0.05, **config))


async def test_worker_runs_every_job_once(queue: JobQueue, clock: FakeClock) -> None:
    seen: list[int] = []

    async def handler(job: Job) -> None:
        seen.append(job.payload["n"])

    await queue.enqueue([NewJob("q", {"n": n}) for n in range(20)])
    worker = make_worker(queue, clock, handler)
    async def counted() -> bool:  # the worker counts an ack once it has returned
        return worker.stats.done == 20

    async with running(worker.run):
        await eventually(state_count(queue, "done", 20), "20 jobs done")
        await eventually(counted, "the worker counted 20 jobs done")  # before stopping it
    assert sorted(seen) == list(range(20)) and worker.stats.done == 20


async def test_worker_timeout_is_a_failed_attempt(queue: JobQueue, clock: FakeClock) -> None:
    async def handler(job: Job) -> None:
        await asyncio.Event().wait()  # never finishes by itself

    async def retried() -> bool:
        return [job.attempts for job in await queue.list("pending")] == [1]

    await queue.enqueue([NewJob("q")])
    async with running(make_worker(queue, clock, handler, job_timeout=0.1).run):
        await eventually(retried, "the timed-out job back in pending")
    [job] = await queue.list("pending")
    assert job.attempts == 1 and job.last_error == "timed out after 0.1s"
    assert job.run_at > clock.now()


async def test_worker_breaker_stops_leasing_after_consecutive_failures(
        queue: JobQueue, clock: FakeClock) -> None:
    calls = 0

    async def handler(job: Job) -> None:
        nonlocal calls
        calls += 1
        raise ConnectionError("origin down")

    await queue.enqueue([NewJob("q", {"n": n}) for n in range(6)])
    worker = make_worker(queue, clock, handler, concurrency=1,
                         breaker=BreakerState(threshold=2, cooldown=3_600))
    async def opened_and_settled() -> bool:
        return worker.breaker.phase == "open" and await state_count(queue, "pending", 6)()

    async with running(worker.run):
        # The fake clock stands still, so the open breaker never reaches its cooldown.
        await eventually(opened_and_settled, "breaker open, failed and unstarted jobs pending")
    assert calls == 2 and worker.stats.failed == 2 and worker.breaker.phase == "open"


async def test_worker_probes_again_when_the_probe_loses_its_lease(
        backend: str, target: str, queue: JobQueue, clock: FakeClock) -> None:
    probing = asyncio.Event()

    async def handler(job: Job) -> None:
        if job.payload.get("fail"):
            raise ConnectionError("origin down")
        if job.payload.get("probe"):
            probing.set()
            await asyncio.Event().wait()  # hangs until the lost lease cancels it

    await queue.enqueue(
        [NewJob("q", {"fail": True}, max_attempts=1), NewJob("q", {"probe": True}, priority=1)]
        + [NewJob("q", {"n": n}, priority=2) for n in range(4)])
    worker = make_worker(queue, clock, handler, concurrency=1, heartbeat_interval=0.02,
                         breaker=BreakerState(threshold=1, cooldown=0))
    thief = await open_queue(backend, target, clock)
    try:
        async with running(worker.run):
            await asyncio.wait_for(probing.wait(), 30)
            assert worker.breaker.phase == "half_open"
            [probe] = await queue.list("running")
            stolen = await steal(thief, clock, probe.id)
            assert await thief.ack_done(stolen.lease)
            await eventually(state_count(queue, "done", 5), "the jobs after the lost probe done")
    finally:
        await thief.aclose()
    assert worker.breaker.phase == "closed" and worker.stats.lost == 1
    assert worker.stats.done == 4


async def steal(thief: JobQueue, clock: FakeClock, job_id: int) -> Job:
    """Let ``job_id``'s lease expire and lease it with ``thief`` (a heartbeat may hold the row)."""
    for _ in range(50):
        clock.advance(31)
        for job in await thief.lease("q", 1, "thief", 30):
            if job.id == job_id:
                return job
            assert await thief.release(job.lease)
    pytest.fail(f"job {job_id} could not be stolen")


class WatchedHeartbeats:
    """The queue with its heartbeats watched and faults injected: each call is counted,
    waits for ``gate``, and reports the ids in ``lose`` as lost whatever the database says."""

    def __init__(self, queue: JobQueue) -> None:
        self.queue = queue
        self.calls = 0
        self.finished = 0
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        self.gate.set()
        self.lose: set[int] = set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.queue, name)

    async def heartbeat(self, leases: Sequence[Lease], ttl: float) -> frozenset[int]:
        self.calls += 1
        self.entered.set()
        await self.gate.wait()
        held = await self.queue.heartbeat(leases, ttl)
        self.finished += 1
        return held - self.lose


async def test_worker_heartbeat_racing_an_ack_loses_nothing(
        queue: JobQueue, clock: FakeClock) -> None:
    watched = WatchedHeartbeats(queue)
    watched.gate.clear()

    async def handler(job: Job) -> None:
        await watched.entered.wait()  # a heartbeat has taken this running job along

    async def heartbeat_finished() -> bool:
        return watched.finished == 1

    await queue.enqueue([NewJob("q")])
    worker = make_worker(cast(JobQueue, watched), clock, handler, heartbeat_interval=0.01)
    async with running(worker.run):
        await eventually(state_count(queue, "done", 1), "the job acked")
        watched.gate.set()  # the heartbeat now finds the job done, not held
        await eventually(heartbeat_finished, "the racing heartbeat back")
    assert (worker.stats.done, worker.stats.lost) == (1, 0)


async def test_worker_cancels_a_job_whose_lease_is_lost_once(
        queue: JobQueue, clock: FakeClock) -> None:
    watched = WatchedHeartbeats(queue)
    started: set[int] = set()
    cleaning = asyncio.Event()
    may_finish_cleanup = asyncio.Event()
    cleaned: list[int] = []

    async def handler(job: Job) -> None:
        started.add(job.id)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if job.payload["victim"]:
                cleaning.set()
                await may_finish_cleanup.wait()  # a second cancel would break in here
                cleaned.append(job.id)
            raise

    async def both_started() -> bool:
        return len(started) == 2

    async def heartbeats_after(calls: int) -> bool:
        return watched.calls >= calls + 2

    async def cleanup_done() -> bool:
        return bool(cleaned)

    await queue.enqueue([NewJob("q", {"victim": True}), NewJob("q", {"victim": False})])
    worker = make_worker(cast(JobQueue, watched), clock, handler, concurrency=2,
                         heartbeat_interval=0.01, shutdown_grace=0)
    async with running(worker.run):
        await eventually(both_started, "both jobs running")
        [victim] = [job for job in await queue.list("running") if job.payload["victim"]]
        watched.lose.add(victim.id)
        await cleaning.wait()
        # The other job keeps the heartbeats going while the victim cleans up.
        await eventually(functools.partial(heartbeats_after, watched.calls), "two heartbeats")
        assert worker.stats.lost == 1
        may_finish_cleanup.set()
        await eventually(cleanup_done, "the victim's cleanup finished")
    assert cleaned == [victim.id]


async def test_worker_shutdown_releases_jobs_it_did_not_start(
        queue: JobQueue, clock: FakeClock) -> None:
    started = asyncio.Event()
    proceed = asyncio.Event()

    async def handler(job: Job) -> None:
        started.set()
        await proceed.wait()

    async def buffered_one_released() -> bool:
        return worker.stats.released == 1

    await queue.enqueue([NewJob("q", {"n": n}) for n in range(3)])
    worker = make_worker(queue, clock, handler, concurrency=1)
    async with running(worker.run) as stop:
        await eventually(state_count(queue, "running", 2), "one job running, one buffered")
        await started.wait()
        stop.set()
        await eventually(buffered_one_released, "the buffered job released")
        proceed.set()
    counts = {c.state: c.count for c in await queue.counts()}
    assert counts == {"done": 1, "pending": 2} and worker.stats.released == 1
    assert all(job.attempts == 0 for job in await queue.list("pending"))


class Unreachable:
    """The real queue, but while ``down`` its writes and leases fail (an injected fault:
    the database went away)."""

    FAILING = frozenset({"lease", "heartbeat", "ack_done", "ack_failed", "release"})

    def __init__(self, queue: JobQueue) -> None:
        self.queue = queue
        self.down = False
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.queue, name)
        if name not in self.FAILING:
            return method

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                self.refused += 1
                raise ConnectionError("injected: the database went away")
            return await method(*args, **kwargs)

        return call


async def test_worker_keeps_results_the_queue_cannot_take_and_writes_them_once_it_answers(
        queue: JobQueue, clock: FakeClock) -> None:
    """Job 0 succeeds and job 1 fails (on the same database) while the queue is down:
    both endings are written once it answers, job 1 released (not failed) and run again,
    the breaker (threshold 1) never told of a failure, no attempt used up."""
    outage = Unreachable(queue)
    started: list[int] = []
    gate = asyncio.Event()

    async def handler(job: Job) -> None:
        started.append(job.payload["n"])
        await gate.wait()
        if job.payload["n"] == 1 and started.count(1) == 1:
            raise ConnectionError("the record write found the database gone")

    await queue.enqueue([NewJob("q", {"n": n}) for n in range(2)])
    worker = make_worker(cast(JobQueue, outage), clock, handler, concurrency=2,
                         breaker=BreakerState(threshold=1, cooldown=3_600))

    async def both_started() -> bool:
        return sorted(started) == [0, 1]

    async def refused_writes() -> bool:
        return outage.refused >= 4  # each ending tried again at least once

    async with running(worker.run):
        await eventually(both_started, "both jobs started")
        outage.down = True
        gate.set()
        await eventually(refused_writes, "the endings tried while the queue is down")
        assert await state_count(queue, "running", 2)()  # nothing written, nothing lost
        outage.down = False
        await eventually(state_count(queue, "done", 2), "both jobs done")
    jobs = [await queue.get(job_id) for job_id in (1, 2)]
    assert [(job.state, job.attempts) for job in jobs if job] == [("done", 1), ("done", 1)]
    assert (worker.stats.done, worker.stats.failed, worker.stats.released) == (2, 0, 1)
    assert worker.breaker.phase == "closed" and started.count(1) == 2

"""A worker killed with SIGKILL mid-job loses nothing: the job is reclaimed after
its lease expires and done exactly once more, on both backends.

The killed worker runs on the real clock with a long lease (no stall of a busy
machine can make it expire while that worker lives); the test then moves its own
injected clock past the lease instead of waiting for it to run out.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.job_backends import BACKENDS, open_queue, pg_schema

from stoker.clock import FakeClock, SystemClock
from stoker.jobs.model import Job, NewJob
from stoker.jobs.worker import Worker, WorkerConfig

REPO_ROOT = Path(__file__).resolve().parents[2]
LEASE_TTL = 60.0

# Runs a real Worker whose handler records the start, then hangs.
HANGING_WORKER = """
import asyncio, sys
sys.path.insert(0, sys.argv[4])
from tests.job_backends import open_queue
from stoker.clock import SystemClock
from stoker.jobs.worker import Worker, WorkerConfig

async def main(backend, target, log):
    queue = await open_queue(backend, target, SystemClock())

    async def handler(job):
        with open(log, "a") as out:
            out.write(f"start {job.id} {job.attempts}\\n")
        await asyncio.sleep(3600)

    config = WorkerConfig("kill", lease_ttl=float(sys.argv[5]), poll_interval=0.05,
                          job_timeout=3600)
    await Worker(queue, handler, SystemClock(), config).run(asyncio.Event())

asyncio.run(main(*sys.argv[1:4]))
"""


@pytest.fixture(scope="module")
def pg_kill_schema() -> Iterator[str]:
    with pg_schema() as schema:
        yield schema


@pytest.mark.parametrize("backend", BACKENDS)
async def test_killed_worker_job_is_reclaimed_and_done_once(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    target = (str(tmp_path / "jobs.db") if backend == "sqlite"
              else str(request.getfixturevalue("pg_kill_schema")))
    log = tmp_path / "runs.log"
    log.touch()
    clock = FakeClock(SystemClock().now())
    queue = await open_queue(backend, target, clock, truncate=True)
    try:
        await queue.enqueue([NewJob("kill", {"page": "/"})])
        proc = subprocess.Popen([sys.executable, "-c", HANGING_WORKER, backend, target,
                                 str(log), str(REPO_ROOT), str(LEASE_TTL)])
        try:
            await wait_for(lambda: "start" in log.read_text(), 20)
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(10) == -signal.SIGKILL
        finally:
            proc.kill()
        [held] = await queue.list("running")
        assert held.attempts == 1
        clock.advance(LEASE_TTL + 1)

        async def handler(job: Job) -> None:
            with log.open("a") as out:
                out.write(f"start {job.id} {job.attempts}\ndone {job.id}\n")

        worker = Worker(queue, handler, clock,
                        WorkerConfig("kill", lease_ttl=LEASE_TTL, poll_interval=0.05))
        stop = asyncio.Event()
        running = asyncio.create_task(worker.run(stop))
        try:
            # ``done`` is final and the attempt count below says it ran exactly once more,
            # so no sleep-and-see is needed to rule out a third run.
            await wait_for_async(lambda: queue.get(held.id), lambda j: j.state == "done", 10)
        finally:
            stop.set()
            await asyncio.wait_for(running, 10)
        lines = log.read_text().splitlines()
        assert lines == [f"start {held.id} 1", f"start {held.id} 2", f"done {held.id}"]
        done = await queue.get(held.id)
        assert done is not None and (done.state, done.attempts) == ("done", 2)
        assert worker.stats.done == 1
    finally:
        await queue.aclose()


async def wait_for(condition: object, timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():  # type: ignore[operator]
        assert loop.time() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)


async def wait_for_async(fetch: object, check: object, timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await fetch()  # type: ignore[operator]
        if value is not None and check(value):  # type: ignore[operator]
            return
        assert loop.time() < deadline, f"timed out waiting; last value {value!r}"
        await asyncio.sleep(0.05)

"""Job queue throughput: enqueue + lease + ack, in jobs per second.

Runs Stoker's queue on PostgreSQL, pgqueuer (PyPI) on the same database, and
Stoker's queue on SQLite, with the same job count and batch sizes, in several
interleaved rounds; prints jobs/s per system and the median ratio
stoker-pg / pgqueuer per batch size.

One measurement: enqueue N jobs in batches of B, then lease B and ack those B
(one batched ack) until the queue is empty; jobs/s = N / total time. Every
system starts each measurement from empty tables (truncated, untimed). Each
system runs in a schema of its own, dropped at the end.

    .venv/bin/python bench/job_queue.py [--jobs 10000] [--batches 10,100,500] [--rounds 3]
"""

from __future__ import annotations

import sys

# This file is named like the standard library's ``queue``, which asyncpg and
# logging import: drop bench/ from the path before anything imports it.
if sys.path and sys.path[0].rstrip("/").endswith("bench"):
    del sys.path[0]

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import asyncpg
from pgqueuer.queries import EntrypointExecutionParameter, Queries

from stoker.backends.postgres.connection import create_pool
from stoker.backends.postgres.database import PostgresDatabase
from stoker.backends.postgres.job_queue import PostgresJobQueue
from stoker.backends.sqlite.database import SqliteDatabase
from stoker.backends.sqlite.job_queue import SqliteJobQueue
from stoker.clock import SystemClock
from stoker.jobs.model import NewJob

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
PAYLOAD = {"url": "https://example.com/some/page", "run_id": 1}
PAYLOAD_BYTES = b'{"run_id":1,"url":"https://example.com/some/page"}'

Measure = Callable[[int, int], Awaitable[float]]


async def stoker_pg(url: str, schema: str) -> tuple[Measure, Callable[[], Awaitable[None]]]:
    pool = await create_pool(url, schema=schema, min_size=1, max_size=2)
    queue = PostgresJobQueue(await PostgresDatabase.open(pool), SystemClock())

    async def measure(jobs: int, batch: int) -> float:
        await pool.execute("TRUNCATE jobs")
        return await run_stoker(queue, jobs, batch)

    return measure, pool.close


async def stoker_sqlite(directory: Path) -> tuple[Measure, Callable[[], Awaitable[None]]]:
    queue = SqliteJobQueue(await SqliteDatabase.open(directory / "bench.db"), SystemClock(),
                           owns=True)

    async def measure(jobs: int, batch: int) -> float:
        await queue.reap(-1e12)  # untimed: start from an empty table
        return await run_stoker(queue, jobs, batch)

    return measure, queue.aclose


async def run_stoker(queue: PostgresJobQueue | SqliteJobQueue, jobs: int, batch: int) -> float:
    started = time.perf_counter()
    for start in range(0, jobs, batch):
        await queue.enqueue([NewJob("bench", PAYLOAD)] * min(batch, jobs - start))
    done = 0
    while done < jobs:
        leased = await queue.lease("bench", batch, "bench", 60)
        acked = await queue.ack_done_many([job.lease for job in leased])
        done += len(acked)
    return jobs / (time.perf_counter() - started)


async def pgqueuer(url: str, schema: str) -> tuple[Measure, Callable[[], Awaitable[None]]]:
    pool = await create_pool(url, schema=schema, min_size=1, max_size=2)
    queries = Queries.from_asyncpg_pool(pool)
    await queries.install(create_schema=False)
    manager = uuid.uuid4()
    entrypoints = {"bench": EntrypointExecutionParameter(concurrency_limit=0)}

    async def measure(jobs: int, batch: int) -> float:
        await pool.execute("TRUNCATE pgqueuer, pgqueuer_log, pgqueuer_statistics")
        started = time.perf_counter()
        for start in range(0, jobs, batch):
            n = min(batch, jobs - start)
            await queries.enqueue(["bench"] * n, [PAYLOAD_BYTES] * n, [0] * n)
        done = 0
        while done < jobs:
            picked = await queries.dequeue(
                batch_size=batch, entrypoints=entrypoints, queue_manager_id=manager,
                global_concurrency_limit=None, heartbeat_timeout=timedelta(seconds=60))
            await queries.log_jobs([(job, "successful", None) for job in picked])
            done += len(picked)
        return jobs / (time.perf_counter() - started)

    return measure, pool.close


async def main(args: argparse.Namespace) -> None:
    suffix = uuid.uuid4().hex[:8]
    schemas = {"stoker-pg": f"bench_stoker_{suffix}", "pgqueuer": f"bench_pgq_{suffix}"}
    admin = await asyncpg.connect(args.database_url)
    for schema in schemas.values():
        await admin.execute(f"CREATE SCHEMA {schema}")
    try:
        with tempfile.TemporaryDirectory() as directory:
            systems = {
                "stoker-pg": await stoker_pg(args.database_url, schemas["stoker-pg"]),
                "pgqueuer": await pgqueuer(args.database_url, schemas["pgqueuer"]),
                "stoker-sqlite": await stoker_sqlite(Path(directory)),
            }
            try:
                await report(systems, args)
            finally:
                for _, close in systems.values():
                    await close()
    finally:
        for schema in schemas.values():
            await admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        await admin.close()


async def report(systems: dict[str, tuple[Measure, Callable[[], Awaitable[None]]]],
                 args: argparse.Namespace) -> None:
    batches = [int(b) for b in args.batches.split(",")]
    results: dict[tuple[str, int], list[float]] = {}
    for measure, _ in systems.values():  # warm-up: connections, prepared statements
        await measure(min(args.jobs, 500), 50)
    for round_no in range(args.rounds):
        names = list(systems)
        if round_no % 2:
            names.reverse()  # interleave: nobody always goes first
        for batch in batches:
            for name in names:
                rate = await systems[name][0](args.jobs, batch)
                results.setdefault((name, batch), []).append(rate)
                print(f"round {round_no + 1} batch {batch:>4} {name:<14} {rate:>9.0f} jobs/s",
                      flush=True)
    print(f"\n{args.jobs} jobs per measurement, {args.rounds} rounds; median jobs/s")
    print(f"{'batch':>6} {'stoker-pg':>10} {'pgqueuer':>10} {'stoker-sqlite':>14} "
          f"{'stoker-pg/pgqueuer':>19}")
    for batch in batches:
        med = {name: statistics.median(results[(name, batch)]) for name in systems}
        ratios = [a / b for a, b in zip(results[("stoker-pg", batch)],
                                        results[("pgqueuer", batch)], strict=True)]
        print(f"{batch:>6} {med['stoker-pg']:>10.0f} {med['pgqueuer']:>10.0f} "
              f"{med['stoker-sqlite']:>14.0f} {statistics.median(ratios):>18.2f}x")


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--batches", default="10,100,500")
    parser.add_argument("--rounds", type=int, default=3)
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse()))

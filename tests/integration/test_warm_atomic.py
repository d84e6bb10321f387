"""The warmer's multi-store steps are atomic, on SQLite and PostgreSQL: an error raised at
any step of a re-warm (take the pending URLs, order them, create the run, enqueue its
jobs) or of a start (order, create, enqueue) — injected after the real call has written,
through a store wrapper — loses no purged URL and leaves no active run without jobs; the
same step then succeeds once the fault is gone.  A process killed (SIGKILL) inside a
re-warm's unit of work, its jobs enqueued but not committed, leaves the SQLite file as
it was before the step.  A store call through the database
(not the transaction) inside a unit of work is refused on SQLite instead of waiting for
itself."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.job_backends import BACKENDS, PG_URL, pg_schema

from stoker.backends.postgres.connection import create_pool
from stoker.backends.warm_stores import WarmStores, warm_stores_on_file, warm_stores_on_pool
from stoker.clock import FakeClock
from stoker.schedule.store import ArmMode, Deadline
from stoker.warm.discovery import Discovery
from stoker.warm.run import RevisitPolicy
from stoker.warm.stores import WarmUnit
from stoker.warm.visits import VisitResult
from stoker.warm.warmer import WarmConfig, Warmer

URLS = [f"http://site.test/{n}" for n in range(5)]
REWARM_STEPS = ("pending.take", "hits.popularity", "runs.create", "queue.enqueue")
START_STEPS = ("hits.popularity", "runs.create", "queue.enqueue")
STORES = ("queue", "runs", "deadlines", "pending", "hits")


class Injected(Exception):
    """The fault."""


async def inject(step: str) -> None:
    raise Injected(step)


class Failing:
    """A store whose method ``name`` runs ``after`` (default: raises :class:`Injected`)
    once the real call ran."""

    def __init__(self, store: Any, name: str | None,
                 after: Callable[[str], Awaitable[None]] = inject) -> None:
        self._store, self._name, self._after = store, name, after

    def __getattr__(self, attr: str) -> Any:
        real = getattr(self._store, attr)
        if attr != self._name:
            return real

        async def failing(*args: Any, **kwargs: Any) -> Any:
            result = await real(*args, **kwargs)
            await self._after(attr)
            return result
        return failing


@dataclass
class FaultyStorage:
    """``stores``, with the call ``fault`` (``store.method``) failing inside transactions."""

    stores: WarmStores
    fault: str | None = None
    after: Callable[[str], Awaitable[None]] = inject

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.stores, attr)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[WarmUnit]:
        store, _, method = (self.fault or "").partition(".")
        async with self.stores.transaction() as tx:
            yield FaultyUnit(*(Failing(getattr(tx, name), method if name == store else None,
                                       self.after) for name in STORES))


@dataclass
class FaultyUnit:
    queue: Any
    runs: Any
    deadlines: Any
    pending: Any
    hits: Any


class NoVisits:
    async def visit(self, url: str, headers: Sequence[tuple[bytes, bytes]], *,
                    allowance: int, refresh: bool = False) -> VisitResult:
        raise AssertionError("no visit runs here")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def schema(backend: str) -> Iterator[str | None]:
    if backend == "sqlite":
        yield None
        return
    with pg_schema(migrated=False) as made:
        yield made


async def open_stores(backend: str, tmp_path: Path, schema: str | None,
                      clock: FakeClock) -> WarmStores:
    policy = RevisitPolicy()
    if backend == "sqlite":
        return await warm_stores_on_file(tmp_path / "stoker.db", clock, policy)
    return await warm_stores_on_pool(
        await create_pool(PG_URL, schema=schema, min_size=1, max_size=4), clock, policy,
        owns=True)


@pytest.fixture
async def storage(backend: str, tmp_path: Path,
                  schema: str | None) -> AsyncIterator[FaultyStorage]:
    stores = await open_stores(backend, tmp_path, schema, FakeClock())
    try:
        yield FaultyStorage(stores)
    finally:
        await stores.aclose()


def warmer_on(storage: FaultyStorage) -> Warmer:
    clock = FakeClock()

    async def collect(_: object) -> Discovery:
        return Discovery([])

    async def arm(name: str, mode: ArmMode, delay: float, max_wait: float | None) -> Deadline:
        return await storage.stores.deadlines.arm(name, mode, clock.now(), delay, max_wait)

    return Warmer(config=WarmConfig(variants=((),)), stores=storage,  # type: ignore[arg-type]
                  visitor=NoVisits(), clock=clock, owner="test", collect=collect, arm=arm)


async def jobs(stores: WarmStores) -> int:
    return sum(row.count for row in await stores.queue.counts())


@pytest.mark.parametrize("step", REWARM_STEPS)
async def test_a_rewarm_failing_at_any_step_loses_no_purged_url(
        storage: FaultyStorage, step: str) -> None:
    stores, warmer = storage.stores, warmer_on(storage)
    await stores.pending.add(URLS, 1.0)
    storage.fault = step
    with pytest.raises(Injected, match=step.partition(".")[2]):
        await warmer.on_rewarm_due(Deadline("rewarm"))
    assert await stores.pending.count() == len(URLS)
    assert await stores.runs.active() is None and await jobs(stores) == 0
    storage.fault = None
    await warmer.on_rewarm_due(Deadline("rewarm"))
    run = await stores.runs.active()
    assert run is not None and sorted(await stores.runs.urls(run.id, "queued")) == URLS
    assert await stores.pending.count() == 0 and await jobs(stores) == len(URLS)


@pytest.mark.parametrize("step", START_STEPS)
@pytest.mark.parametrize("urls", [URLS, None], ids=["targeted", "full"])
async def test_a_start_failing_at_any_step_leaves_no_run_without_jobs(
        storage: FaultyStorage, step: str, urls: list[str] | None) -> None:
    stores, warmer = storage.stores, warmer_on(storage)
    storage.fault = step
    if urls is None and step == "hits.popularity":  # a full run orders nothing
        await warmer.start("manual", urls)
        assert await stores.runs.active() is not None and await jobs(stores) == 1
        return
    with pytest.raises(Injected):
        await warmer.start("manual", urls)
    assert await stores.runs.active() is None and await jobs(stores) == 0
    storage.fault = None
    created = await warmer.start("daily", urls, replace=False)
    assert (await stores.runs.active()) == created.run
    assert await jobs(stores) == (1 if urls is None else len(URLS))


async def test_a_unit_of_work_commits_every_store_or_none(storage: FaultyStorage) -> None:
    stores = storage.stores
    with pytest.raises(Injected):
        async with stores.transaction() as tx:
            await tx.pending.add(URLS, 1.0)
            await tx.runs.create("manual", URLS, 1.0)
            raise Injected("end of block")
    assert await stores.pending.count() == 0 and await stores.runs.recent() == []
    async with stores.transaction() as tx:
        await tx.pending.add(URLS, 1.0)
        await tx.runs.create("manual", URLS, 1.0)
    assert await stores.pending.count() == len(URLS) and len(await stores.runs.recent()) == 1


async def test_sqlite_refuses_a_call_around_the_open_transaction(tmp_path: Path) -> None:
    stores = await open_stores("sqlite", tmp_path, None, FakeClock())
    try:
        async with stores.transaction() as tx:
            await tx.pending.add(URLS, 1.0)
            with pytest.raises(RuntimeError, match="transaction"):
                await stores.pending.count()
        assert await stores.pending.count() == len(URLS)
        with pytest.raises(RuntimeError, match="after it ended"):
            await tx.pending.count()
    finally:
        await stores.aclose()


REPO_ROOT = Path(__file__).resolve().parents[2]
KILLED_REWARM = """
import asyncio, sys
sys.path.insert(0, sys.argv[2])
from tests.integration.test_warm_atomic import FaultyStorage, open_stores, warmer_on
from stoker.clock import FakeClock
from stoker.schedule.store import Deadline

async def hang(step):
    print("inside", step, flush=True)
    await asyncio.sleep(3600)

async def main(path):
    stores = await open_stores("sqlite", path, None, FakeClock())
    storage = FaultyStorage(stores, "queue.enqueue", hang)
    await warmer_on(storage).on_rewarm_due(Deadline("rewarm"))

asyncio.run(main(__import__("pathlib").Path(sys.argv[1])))
"""


async def test_a_rewarm_killed_inside_its_unit_of_work_leaves_the_file_as_before(
        tmp_path: Path) -> None:
    stores = await open_stores("sqlite", tmp_path, None, FakeClock())
    try:
        await stores.pending.add(URLS, 1.0)
    finally:
        await stores.aclose()
    child = subprocess.Popen([sys.executable, "-c", KILLED_REWARM, str(tmp_path),
                              str(REPO_ROOT)], stdout=subprocess.PIPE, cwd=REPO_ROOT)
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), 60)
        assert line.split() == [b"inside", b"enqueue"]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    stores = await open_stores("sqlite", tmp_path, None, FakeClock())
    try:
        assert await stores.pending.count() == len(URLS)
        assert await stores.runs.recent() == [] and await jobs(stores) == 0
    finally:
        await stores.aclose()

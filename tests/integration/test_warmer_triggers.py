"""What starts warm runs, through a real Stoker (real SQLite stores, a real origin) whose
clock the test drives (``FakeClock(auto_advance=False)``): purges (small ones too:
``rewarm_now_max = 0`` here) are debounced into one targeted run of exactly the purged
URLs, the ``rewarm`` deadline survives a restart, a purge of everything starts a full
run (``deploy`` when soft), and a targeted re-warm merges into a full run that is going.
The restart case also runs on PostgreSQL (``database_url`` on a fresh schema)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from tests.integration.warm_site import (
    DEADLINE,
    SITE,
    SiteOrigin,
    Warming,
    page,
    site_origin,
    warming,
)
from tests.job_backends import pg_schema, schema_url

from stoker.clock import FakeClock, SystemClock
from stoker.purge.scope import PurgeScope
from stoker.schedule.store import Deadline
from stoker.warm.run import Run
from stoker.warm.warmer import REWARM

PAGES = 120
DELAY, MAX_WAIT = 60.0, 300.0
T = TypeVar("T")
NUDGE = 1.0
STEP_OVER = 0.5  # the fake clock sums its steps in floats: step a little past a deadline
SETTINGS: dict[str, Any] = {"rewarm_delay": f"{DELAY:.0f}s",
                            "rewarm_max_wait": f"{MAX_WAIT:.0f}s", "rewarm_now_max": 0}


def fake_clock() -> FakeClock:
    """A clock the test moves, starting at the real time: the origin's Date headers are
    real, and an entry's age is reckoned from them."""
    return FakeClock(SystemClock().now(), auto_advance=False)


@asynccontextmanager
async def warmed(site: SiteOrigin, data_dir: Path, clock: FakeClock,
                 **settings: Any) -> AsyncIterator[Warming]:
    """Stoker for ``site`` on ``clock``, the whole site warmed once; the origin's counts
    start afresh."""
    async with site_origin(site) as origin_url, \
            warming(origin_url, data_dir, clock=clock, **{**SETTINGS, **settings}) as warm:
        created = await warm.service.warmer.start("manual", None)
        run = await warm.wait_run(created.run.id)
        assert (run.phase, run.counts.warmed) == ("done", PAGES + 1), run
        site.forget()
        yield warm


async def purge_tags(warm: Warming, clock: FakeClock, pages: list[int], spread: float) -> None:
    """Hard-purge the tag of each of ``pages``, ``spread`` seconds apart on ``clock``; each
    purge's URL is recorded for the re-warm (in the background) before the clock moves on."""
    for index, n in enumerate(pages):
        if index:
            clock.advance(spread)
        result = await warm.stoker.purger.purge(PurgeScope(tags=(f"page-{n}",)))
        assert result.urls == (f"{SITE}{page(n)}",), result
        await warm.service.warmer.rewarms.settle()


async def rewarm_deadline(warm: Warming) -> Deadline:
    [row] = [row for row in await warm.service.stores.deadlines.list() if row.name == REWARM]
    return row


async def driven(clock: FakeClock, check: Callable[[], Awaitable[T | None]]) -> T:
    """Poll ``check`` until it gives a value, nudging ``clock`` on by :data:`NUDGE` each
    time: a loop that computed its sleep just before the test moved the clock starts
    sleeping from the new time, and only a later move wakes it."""
    async def poll() -> T:
        while (value := await check()) is None:
            clock.advance(NUDGE)
            await asyncio.sleep(0.02)
        return value

    return await asyncio.wait_for(poll(), DEADLINE)


async def next_run(warm: Warming, clock: FakeClock, after: int) -> Run:
    """The first run with an id above ``after``, once it ended."""
    async def newer() -> int | None:
        return min((run.id for run in await warm.service.stores.runs.recent()
                    if run.id > after), default=None)

    return await warm.wait_run(await driven(clock, newer))


@pytest.mark.parametrize(("max_wait", "due_after_first"), [
    (MAX_WAIT, 120.0 + DELAY),  # rewarm_delay after the last purge
    (150.0, 150.0),  # but at most rewarm_max_wait after the first
])
async def test_a_burst_of_tag_purges_rewarms_exactly_those_urls_once(
        tmp_path: Path, max_wait: float, due_after_first: float) -> None:
    site, clock = SiteOrigin(PAGES), fake_clock()
    purged = list(range(2, 102, 2))  # 50 pages
    async with warmed(site, tmp_path / "data", clock,
                      rewarm_max_wait=f"{max_wait:.0f}s") as warm:
        before = (await warm.service.stores.runs.recent())[0].id
        first = clock.now()
        await purge_tags(warm, clock, purged, 120.0 / (len(purged) - 1))
        deadline = await rewarm_deadline(warm)
        pending = await warm.service.stores.pending.count()
        assert await warm.service.stores.runs.active() is None
        clock.advance(first + due_after_first - clock.now() + STEP_OVER)
        run = await next_run(warm, clock, before)
        runs_after = [r.id for r in await warm.service.stores.runs.recent()]
    assert pending == len(purged)
    assert deadline.first_armed_at == first
    assert deadline.due_at == pytest.approx(first + due_after_first)
    assert (run.phase, run.reason, run.scope) == ("done", "purge", "urls")
    assert (run.counts.total, run.counts.warmed) == (len(purged), len(purged))
    assert runs_after == [run.id, before]  # one run for the whole burst
    assert site.page_hits() == {page(n): 1 for n in purged}


async def test_a_purge_call_does_not_wait_for_its_urls_to_be_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pending store is held: the purge answers anyway, and the URL reaches the store
    (and the deadline is armed) once it lets go."""
    site, clock = SiteOrigin(PAGES), fake_clock()
    async with warmed(site, tmp_path / "data", clock) as warm:
        pending = warm.service.stores.pending
        held, add = asyncio.Event(), pending.add

        async def held_add(urls: Any, now: float) -> int:
            await held.wait()
            return await add(urls, now)

        monkeypatch.setattr(pending, "add", held_add)
        result = await warm.stoker.purger.purge(PurgeScope(tags=("page-7",)))
        assert result.urls == (f"{SITE}{page(7)}",)
        recorded_before = await pending.count()
        waiting = warm.service.warmer.rewarms.waiting()
        held.set()
        await warm.service.warmer.rewarms.settle()
        deadline = await rewarm_deadline(warm)
        recorded_after = await pending.count()
    assert (recorded_before, waiting, recorded_after) == (0, 1, 1)
    assert deadline.due_at == pytest.approx(clock.now() + DELAY)


@asynccontextmanager
async def restarted_after_purges(site: SiteOrigin, data_dir: Path, purged: list[int],
                                 ahead: float, **settings: Any
                                 ) -> AsyncIterator[tuple[Warming, FakeClock, Deadline, int]]:
    """Purge the tags of ``purged`` pages, close Stoker, start it again on the same
    data dir (and ``settings``) with a clock ``ahead`` seconds later: ``(warm, clock,
    the rewarm deadline as armed before the restart, the last run before)``."""
    clock = fake_clock()
    async with warmed(site, data_dir, clock, **settings) as warm:
        before = (await warm.service.stores.runs.recent())[0].id
        first = clock.now()
        await purge_tags(warm, clock, purged, 1.0)
        armed = await rewarm_deadline(warm)
    assert site.page_hits() == {}
    assert armed.due_at == pytest.approx(first + len(purged) - 1 + DELAY)
    later = FakeClock(clock.now() + ahead, auto_advance=False)
    async with site_origin(site) as origin_url, \
            warming(origin_url, data_dir, clock=later, **SETTINGS, **settings) as warm:
        yield warm, later, armed, before


@pytest.fixture(params=["sqlite", "postgres"])
def backend_settings(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """No settings (SQLite in the data dir), or a ``database_url`` on a fresh schema."""
    if request.param == "sqlite":
        yield {}
        return
    with pg_schema(migrated=False) as schema:
        yield {"database_url": schema_url(schema)}


async def test_a_rewarm_armed_before_a_restart_fires_after_it(
        tmp_path: Path, backend_settings: dict[str, Any]) -> None:
    site, purged = SiteOrigin(PAGES), [3, 4, 5]
    async with restarted_after_purges(site, tmp_path / "data", purged, 0.0,
                                      **backend_settings) as (warm, clock, armed, before):
        assert await rewarm_deadline(warm) == armed
        assert await warm.service.stores.pending.count() == len(purged)
        assert armed.due_at is not None
        clock.advance(armed.due_at - clock.now() + STEP_OVER)
        run = await next_run(warm, clock, before)
    assert (run.phase, run.reason, run.counts.warmed) == ("done", "purge", len(purged))
    assert site.page_hits() == {page(n): 1 for n in purged}


async def test_a_rewarm_due_while_stopped_fires_at_the_restart(tmp_path: Path) -> None:
    site, purged = SiteOrigin(PAGES), [3, 4, 5]
    async with restarted_after_purges(site, tmp_path / "data", purged, 600.0) as (
            warm, clock, _, before):
        run = await next_run(warm, clock, before)
    assert (run.phase, run.reason, run.counts.warmed) == ("done", "purge", len(purged))
    assert site.page_hits() == {page(n): 1 for n in purged}


async def test_a_hard_purge_of_everything_starts_a_full_run(tmp_path: Path) -> None:
    site, clock = SiteOrigin(PAGES), fake_clock()
    async with warmed(site, tmp_path / "data", clock) as warm:
        before = (await warm.service.stores.runs.recent())[0].id
        await warm.stoker.purger.purge(PurgeScope(everything=True))
        run = await next_run(warm, clock, before)
    assert (run.phase, run.reason, run.scope) == ("done", "purge", "site")
    assert run.counts.warmed == PAGES + 1
    assert site.page_hits() == {page(n): 1 for n in range(1, PAGES + 1)}


async def test_a_deploy_runs_in_full_and_a_purge_meanwhile_merges_into_it(
        tmp_path: Path) -> None:
    site, clock = SiteOrigin(PAGES), fake_clock()
    async with warmed(site, tmp_path / "data", clock) as warm:
        before = (await warm.service.stores.runs.recent())[0].id
        site.gate.clear()  # hold the deploy run's page visits at the origin
        await warm.stoker.purger.purge(PurgeScope(everything=True, soft=True))
        deploy = await warm.service.stores.runs.active()
        await purge_tags(warm, clock, [7], 0.0)
        clock.advance(DELAY + STEP_OVER)

        async def merged() -> bool | None:
            idle = not await warm.service.stores.pending.count() and \
                (await rewarm_deadline(warm)).due_at is None
            return True if idle else None

        await driven(clock, merged)
        still = await warm.service.stores.runs.active()
        site.gate.set()
        assert deploy is not None
        done = await warm.wait_run(deploy.id)
        ids = [run.id for run in await warm.service.stores.runs.recent()]
    assert deploy is not None and (deploy.reason, deploy.scope) == ("deploy", "site")
    assert deploy.id == before + 1
    assert still is not None and still.id == deploy.id
    assert ids == [deploy.id, before]  # the re-warm started no run of its own
    assert done.phase == "done" and done.counts.total == PAGES + 1
    assert done.counts.settled == PAGES + 1

"""The Warmer's decisions around its ports, on real SQLite stores and a fake clock, with
a scripted :class:`~stoker.warm.visits.Visitor` and discovery (the injected faults):
the worst variant decides a URL's result (a page not stored counts as such, with its
reason), an origin that does not answer is retried until the job's last attempt, a
stale copy standing in for a failing origin is a failure at once, runs that ended
ignore their jobs, the daily refresh is armed after each run (from its start
when it failed) or put off while a full run goes, and a small purge arms the re-warm at
once while a large one is debounced; a discovery the origin failed is retried with
backoff, and URLs that failed while the origin was down are warmed again (a
``recovery`` run) once a visit of the first of them answers."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.backends.warm_stores import WarmStores, warm_stores_on_file
from stoker.clock import FakeClock
from stoker.config.settings import settings_from
from stoker.jobs.model import Job
from stoker.purge.scope import PurgeScope
from stoker.schedule.store import ArmMode, Deadline
from stoker.schedule.ticker import RetryIn
from stoker.warm.discovery import Discovery, DiscoveryError
from stoker.warm.run import Counts, Result, RevisitPolicy, Run
from stoker.warm.visits import STALE_SERVED, VisitResult
from stoker.warm.warmer import (
    QUEUE,
    RECOVER,
    REFRESH,
    REWARM,
    OriginDown,
    WarmConfig,
    Warmer,
    rewarm_at_once,
    summary,
    worst,
)

SITE = "http://www.example.test"
DESKTOP = ((b"user-agent", b"desktop"),)
MOBILE = ((b"user-agent", b"mobile"),)
REFRESH_EVERY = 86_400.0
STOPGAP_DELAY = 20.0


@dataclass
class ScriptedVisitor:
    """Answers ``(url, user-agent)`` with the scripted outcome, status and detail (default:
    warmed)."""

    script: dict[tuple[str, bytes], tuple[str, int, str]] = field(default_factory=dict)
    visited: list[tuple[str, bytes]] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)

    async def visit(self, url: str, headers: Sequence[tuple[bytes, bytes]], *,
                    allowance: int, refresh: bool = False) -> VisitResult:
        agent = dict(headers)[b"user-agent"]
        self.visited.append((url, agent))
        if refresh:
            self.refreshed.append(url)
        outcome, status, detail = self.script.get((url, agent), ("warmed", 200, ""))
        return VisitResult(url, status, outcome, 0.01, detail=detail)


@dataclass
class Bench:
    warmer: Warmer
    stores: WarmStores
    visitor: ScriptedVisitor
    clock: FakeClock
    discovered: list[str]
    discovery_error: str | None = None
    origin_error: bool = False

    async def jobs(self) -> list[Job]:
        return list(await self.stores.queue.lease(QUEUE, 100, "test", 60.0))

    async def work(self) -> None:
        """Handle due jobs, and those they queue, until none is left."""
        while jobs := await self.jobs():
            for job in jobs:
                await self.warmer.handle(job)

    async def refresh(self) -> Deadline:
        return await self.deadline(REFRESH)

    async def deadline(self, name: str) -> Deadline:
        [row] = [row for row in await self.stores.deadlines.list() if row.name == name]
        return row


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    clock = FakeClock()
    settings = settings_from({"origin": "http://127.0.0.1:9", "data_dir": str(tmp_path)})
    stores = await warm_stores_on_file(settings.sqlite_path, clock,
                                       RevisitPolicy(delay=STOPGAP_DELAY))
    visitor = ScriptedVisitor()
    made: list[Bench] = []

    async def collect(_: Mapping[str, int]) -> Discovery:
        if made[0].discovery_error:
            raise DiscoveryError(f"{SITE}/sitemap.xml", made[0].discovery_error,
                                 origin=made[0].origin_error)
        return Discovery(list(made[0].discovered))

    async def arm(name: str, mode: ArmMode, delay: float, max_wait: float | None) -> Deadline:
        return await stores.deadlines.arm(name, mode, clock.now(), delay, max_wait)

    warmer = Warmer(
        config=WarmConfig(variants=(DESKTOP, MOBILE), refresh_interval=REFRESH_EVERY),
        stores=stores, visitor=visitor, clock=clock, owner="test", collect=collect, arm=arm)
    made.append(Bench(warmer, stores, visitor, clock, [f"{SITE}/", f"{SITE}/a"]))
    try:
        yield made[0]
    finally:
        await stores.aclose()


async def test_the_worst_variant_decides_and_a_stopgap_is_revisited_later(
        bench: Bench) -> None:
    bench.visitor.script[(f"{SITE}/a", b"mobile")] = ("stopgap", 200, "")
    created = await bench.warmer.start("manual", [f"{SITE}/", f"{SITE}/a"])
    await bench.work()
    run = await bench.stores.runs.get(created.run.id)
    assert run is not None and run.phase == "warm"
    assert (run.counts.warmed, run.counts.stopgap_pending) == (1, 1)
    assert await bench.jobs() == []  # the revisit waits for stopgap_delay
    bench.clock.advance(STOPGAP_DELAY)
    [revisit] = await bench.jobs()
    assert (revisit.payload["url"], revisit.payload["visit"]) == (f"{SITE}/a", 1)
    assert sorted(bench.visitor.visited) == sorted(
        (url, agent) for url in (f"{SITE}/", f"{SITE}/a") for agent in (b"desktop", b"mobile"))


async def test_an_origin_that_does_not_answer_is_retried_until_the_last_attempt(
        bench: Bench) -> None:
    bench.visitor.script[(f"{SITE}/a", b"desktop")] = ("failed", 502, "status 502")
    created = await bench.warmer.start("manual", [f"{SITE}/a"])
    [job] = await bench.jobs()
    assert job.attempts < job.max_attempts
    with pytest.raises(OriginDown, match="/a"):
        await bench.warmer.handle(job)
    run = await bench.stores.runs.get(created.run.id)
    assert run is not None and run.counts.settled == 0
    await bench.warmer.handle(dataclasses.replace(job, attempts=job.max_attempts))
    run = await bench.stores.runs.get(created.run.id)
    assert run is not None and (run.phase, run.counts.failed) == ("done", 1)
    assert (await bench.refresh()).due_at == bench.clock.now() + REFRESH_EVERY


def visits(*answers: tuple[str, str]) -> list[VisitResult]:
    return [VisitResult("/a", 200, outcome, 0.01, detail=detail) for outcome, detail in answers]


@pytest.mark.parametrize(("answers", "result", "detail"), [
    ([("fresh", "")], "warmed", None),
    ([("warmed", ""), ("not_modified", "")], "warmed", None),
    ([("not_modified", ""), ("fresh", "")], "warmed", None),
    ([("fresh", ""), ("not_stored", "set-cookie")], "not_stored", "set-cookie"),
    ([("not_stored", ""), ("warmed", "")], "not_stored", "not stored"),
    ([("not_stored", "private"), ("not_stored", "set-cookie")], "not_stored", "private"),
    ([("not_stored", "private"), ("stopgap", "")], "stopgap", None),
    ([("stopgap", ""), ("failed", STALE_SERVED)], "failed", STALE_SERVED),
    ([("not_stored", "private"), ("failed", "status 404")], "failed", "status 404"),
    ([], "warmed", None),
])
def test_the_worst_variant_decides_with_its_detail(answers: list[tuple[str, str]],
                                                   result: Result, detail: str | None) -> None:
    assert worst(visits(*answers)) == (result, detail)


async def test_a_page_not_stored_counts_not_stored_with_its_reason(
        bench: Bench, caplog: pytest.LogCaptureFixture) -> None:
    bench.visitor.script[(f"{SITE}/a", b"mobile")] = ("not_stored", 200, "set-cookie")
    bench.visitor.script[(f"{SITE}/", b"desktop")] = ("fresh", 200, "")
    with caplog.at_level(logging.INFO, "stoker.warm"):
        created = await bench.warmer.start("manual", [f"{SITE}/", f"{SITE}/a"])
        await bench.work()
    run = await bench.stores.runs.get(created.run.id)
    assert run is not None and run.phase == "done"
    assert run.counts == Counts(total=2, warmed=1, not_stored=1)
    assert await bench.stores.runs.not_stored_reasons(run.id) == {"set-cookie": 1}
    assert await bench.stores.runs.urls(run.id, "not_stored") == [f"{SITE}/a"]
    assert "2 URLs, 1 warmed, 0 not modified, 1 not stored (set-cookie: 1), 0 failed" \
        in caplog.text


async def test_a_stale_copy_for_a_failing_origin_fails_at_once_and_teaches_nothing(
        bench: Bench) -> None:
    for agent in (b"desktop", b"mobile"):
        bench.visitor.script[(f"{SITE}/a", agent)] = ("failed", 200, STALE_SERVED)
    created = await bench.warmer.start("manual", [f"{SITE}/a"])
    [job] = await bench.jobs()
    assert job.attempts < job.max_attempts
    await bench.warmer.handle(job)
    run = await bench.stores.runs.get(created.run.id)
    assert run is not None and (run.phase, run.counts.failed) == ("done", 1)
    assert bench.warmer.throttle.baseline is None  # the origin's latency is unknown
    assert await bench.stores.runs.urls(run.id, "failed") == [f"{SITE}/a"]


def test_the_summary_names_the_reasons_pages_were_not_stored() -> None:
    run = Run(3, "manual", "site", "done", 0.0,
              Counts(total=6, warmed=1, not_modified=1, not_stored=3, failed=1))
    assert summary(run, {"set-cookie": 2, "private": 1}) == (
        "6 URLs, 1 warmed, 1 not modified, 3 not stored (set-cookie: 2, private: 1), "
        "1 failed, 0 rewarmed, 0 gave up")
    assert summary(dataclasses.replace(run, phase="failed", error="sitemap"), {}).endswith(
        "3 not stored, 1 failed, 0 rewarmed, 0 gave up; sitemap")


async def test_jobs_of_a_superseded_run_do_nothing(bench: Bench) -> None:
    old = await bench.warmer.start("manual", [f"{SITE}/a"])
    [stale] = await bench.jobs()
    new = await bench.warmer.start("deploy", None)
    assert new.cancelled is not None and new.cancelled.id == old.run.id
    await bench.warmer.handle(stale)
    assert bench.visitor.visited == []
    await bench.work()
    run = await bench.stores.runs.get(new.run.id)
    assert run is not None and (run.phase, run.counts.warmed) == ("done", 2)


async def test_a_run_whose_sitemap_is_broken_fails_and_arms_the_refresh_from_its_start(
        bench: Bench) -> None:
    bench.discovery_error = "more than 50000 URLs"  # not the origin's outage: no retry
    created = await bench.warmer.start("manual", None)
    started = bench.clock.now()
    bench.clock.advance(600)
    [collect] = await bench.jobs()
    await bench.warmer.handle(collect)
    run = await bench.stores.runs.get(created.run.id)
    assert run is not None and (run.phase, run.error) == (
        "failed", f"{SITE}/sitemap.xml: more than 50000 URLs")
    assert (await bench.refresh()).due_at == started + REFRESH_EVERY


async def test_a_refresh_due_while_a_full_run_goes_is_put_off(bench: Bench) -> None:
    going = await bench.warmer.start("manual", None)
    await bench.warmer.on_refresh_due(Deadline(REFRESH))
    assert await bench.stores.runs.active() == going.run
    assert (await bench.refresh()).due_at == \
        bench.clock.now() + bench.warmer.config.rewarm_max_wait


@given(count=st.integers(1, 100), most=st.integers(0, 100))
def test_a_purge_of_fewer_urls_than_rewarm_now_max_is_rewarmed_at_once(count: int,
                                                                       most: int) -> None:
    assert rewarm_at_once(count, most) is (count < most)
    assert not rewarm_at_once(count, 0)  # 0: off


async def purged(bench: Bench, count: int) -> Deadline:
    """The ``rewarm`` deadline after a purge of ``count`` URLs was recorded."""
    await bench.warmer.on_purge(PurgeScope(urls=("x",)), (), [f"{SITE}/{n}" for n in range(count)])
    await bench.warmer.rewarms.settle()
    return await bench.deadline(REWARM)


async def test_a_small_purge_arms_the_rewarm_now_a_large_one_after_the_delay(
        bench: Bench) -> None:
    config = bench.warmer.config
    bench.warmer.config = dataclasses.replace(config, rewarm_now_max=3)
    assert (await purged(bench, 3)).due_at == bench.clock.now() + config.rewarm_delay
    bench.clock.advance(5)
    assert (await purged(bench, 2)).due_at == bench.clock.now()  # pulls the first along
    await bench.warmer.on_rewarm_due(await bench.deadline(REWARM))
    run = await bench.stores.runs.active()
    assert run is not None and (run.reason, run.counts.total) == ("purge", 3)  # /0 /1 /2


async def test_rewarm_now_max_zero_always_debounces(bench: Bench) -> None:
    bench.warmer.config = dataclasses.replace(bench.warmer.config, rewarm_now_max=0)
    due = (await purged(bench, 1)).due_at
    assert due == bench.clock.now() + bench.warmer.config.rewarm_delay


async def recover_row(bench: Bench) -> Deadline | None:
    rows = [row for row in await bench.stores.deadlines.list() if row.name == RECOVER]
    return rows[0] if rows and rows[0].due_at is not None else None


async def test_a_discovery_the_origin_failed_is_retried_with_backoff_until_it_succeeds(
        bench: Bench) -> None:
    bench.discovery_error, bench.origin_error = "the origin answered 502", True
    created = await bench.warmer.start("manual", None)
    waits = []
    for _ in range(3):
        [collect] = await bench.jobs()
        await bench.warmer.handle(collect)
        await bench.stores.queue.ack_done(collect.lease)
        run = await bench.stores.runs.get(created.run.id)
        assert run is not None and run.phase == "collect" and run.collect_owner is None
        assert await bench.jobs() == []  # not before its time
        [queued] = await bench.stores.queue.list("pending", limit=10)
        waits.append(queued.run_at - bench.clock.now())
        bench.clock.advance(waits[-1])
    assert waits == [30.0, 60.0, 120.0]
    assert run.error is not None and "discovery failed (try 3)" in run.error \
        and "trying again in 120 s" in run.error
    bench.discovery_error = None
    await bench.work()
    run = await bench.stores.runs.get(created.run.id)
    assert run is not None and (run.phase, run.error, run.counts.warmed) == ("done", None, 2)


async def test_the_collect_retries_of_a_superseded_run_do_nothing(bench: Bench) -> None:
    bench.discovery_error, bench.origin_error = "fetch failed", True
    old = await bench.warmer.start("manual", None)
    [collect] = await bench.jobs()
    await bench.warmer.handle(collect)
    bench.discovery_error = None
    new = await bench.warmer.start("manual", None, replace=True)
    bench.clock.advance(30)
    await bench.work()
    gone, done = (await bench.stores.runs.get(old.run.id), await bench.stores.runs.get(
        new.run.id))
    assert gone is not None and gone.phase == "cancelled"
    assert done is not None and done.phase == "done"


async def failed_while_down(bench: Bench, failures: dict[str, str]) -> Run:
    """A targeted run whose URLs failed as ``failures`` says (``url``: detail)."""
    for url, detail in failures.items():
        status = int(detail.removeprefix("status ")) if detail.startswith("status ") else 200
        bench.visitor.script[(url, b"desktop")] = ("failed", status, detail)
    created = await bench.warmer.start("manual", list(failures))
    for job in await bench.jobs():
        await bench.warmer.handle(dataclasses.replace(job, attempts=job.max_attempts))
    run = await bench.stores.runs.get(created.run.id)
    assert run is not None and run.phase == "done"
    return run


async def test_urls_that_failed_while_the_origin_was_down_become_one_recovery_run(
        bench: Bench) -> None:
    a, b, gone, stale = (f"{SITE}/{name}" for name in ("a", "b", "gone", "stale"))
    await bench.stores.hits.add({b: (9, 0)}, bench.clock.now())
    await failed_while_down(bench, {a: "status 502", b: "status 504", gone: "status 404",
                                    stale: STALE_SERVED})
    row = await recover_row(bench)
    assert row is not None and row.due_at == bench.clock.now() + 30.0  # a 5xx opens no breaker
    bench.visitor.script.clear()
    bench.visitor.visited.clear()
    await bench.warmer.on_recover_due(row)
    assert bench.visitor.visited == [(b, b"desktop")]  # the probe: the most visited
    recovery = await bench.stores.runs.active()
    assert recovery is not None and recovery.reason == "recovery"
    [first, *rest] = await bench.jobs()
    assert [first.payload["url"], *(job.payload["url"] for job in rest)] == [b, a, stale]
    for job in (first, *rest):
        await bench.warmer.handle(job)
    assert await bench.stores.runs.last_failures(0.0) == [(gone, "status 404")]
    await bench.warmer.on_recover_due(row)  # nothing left that the outage caused
    assert await bench.stores.runs.active() is None


async def test_while_the_first_url_still_fails_the_recovery_waits_longer_each_time(
        bench: Bench) -> None:
    a = f"{SITE}/a"
    await failed_while_down(bench, {a: "status 502"})
    row = await recover_row(bench)
    assert row is not None
    delays = []
    for attempts in (1, 2, 3, 9):
        with pytest.raises(RetryIn, match="1 URL waiting for the origin") as retry:
            await bench.warmer.on_recover_due(dataclasses.replace(row, attempts=attempts))
        delays.append(retry.value.delay)
    assert delays == [30.0, 60.0, 120.0, 1800.0]
    assert await bench.stores.runs.active() is None


async def test_the_origin_coming_back_arms_the_recovery_at_once(bench: Bench) -> None:
    await bench.warmer.on_origin_back()
    row = await recover_row(bench)
    assert row is not None and row.due_at == bench.clock.now()


async def test_a_run_without_failures_arms_no_recovery(bench: Bench) -> None:
    await bench.warmer.start("manual", [f"{SITE}/a"])
    await bench.work()
    assert await recover_row(bench) is None


async def test_a_refresh_is_a_throttled_visit_that_revalidates(bench: Bench) -> None:
    bench.visitor.script[(f"{SITE}/a", b"ua")] = ("not_modified", 200, "")
    result = await bench.warmer.refresh(f"{SITE}/a", ((b"user-agent", b"ua"),))
    assert (result.outcome, bench.visitor.refreshed) == ("not_modified", [f"{SITE}/a"])
    assert bench.warmer.throttle.baseline == 0.01  # it taught the throttle

"""The ``RunStore`` contract: one suite, run against SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from tests.job_backends import BACKENDS, PG_URL, pg_schema, place

from stoker.backends.postgres.connection import create_pool
from stoker.backends.postgres.database import PostgresDatabase
from stoker.backends.postgres.run_store import PostgresRunStore
from stoker.backends.sqlite.database import SqliteDatabase
from stoker.backends.sqlite.run_store import SqliteRunStore
from stoker.warm.run import COLLECT_STALL, Counts, Visit
from stoker.warm.run_store import RunStore

NOW = 1_700_000_000.0


@pytest.fixture(scope="session")
def pg_runs_schema() -> Iterator[str]:
    with pg_schema(migrated=False) as schema:
        yield schema


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """``(backend, place)``: the SQLite file, or the PostgreSQL schema."""
    return request.param, place(request.param, tmp_path, request, "pg_runs_schema")


async def open_store(target: tuple[str, str], *, truncate: bool = False) -> RunStore:
    backend, place = target
    if backend == "sqlite":
        return SqliteRunStore(await SqliteDatabase.open(Path(place)), owns=True)
    pool = await create_pool(PG_URL, schema=place, min_size=1, max_size=8)
    store = PostgresRunStore(await PostgresDatabase.open(pool), owns=True)
    if truncate:
        await pool.execute("TRUNCATE warm_runs, warm_run_urls, warm_run_skipped RESTART IDENTITY")
    return store


@pytest.fixture
async def store(target: tuple[str, str]) -> AsyncIterator[RunStore]:
    opened = await open_store(target, truncate=True)
    yield opened
    await opened.aclose()


async def collecting(store: RunStore, urls: list[str], owner: str = "w1") -> int:
    """A full run whose collect ``owner`` stored ``urls``; its id."""
    created = await store.create("manual", None, NOW)
    assert await store.claim_collect(created.run.id, owner, NOW)
    collected = await store.set_total(created.run.id, owner, urls, NOW)
    assert collected is not None
    return created.run.id


# --- create: start, busy, supersede, merge -----------------------------------------------

async def test_a_full_run_starts_collecting_and_is_the_active_one(store: RunStore) -> None:
    created = await store.create("deploy", None, NOW)
    assert created.outcome == "started" and created.visits == [] and created.cancelled is None
    run = created.run
    assert (run.reason, run.scope, run.phase, run.started_at) == ("deploy", "site", "collect", NOW)
    assert await store.active() == run
    assert await store.get(run.id) == run


async def test_a_second_full_run_is_busy_unless_it_replaces(store: RunStore) -> None:
    first = (await store.create("manual", None, NOW)).run
    busy = await store.create("manual", None, NOW + 1, replace=False)
    assert (busy.outcome, busy.run) == ("busy", first)
    second = await store.create("deploy", None, NOW + 2, replace=True)
    assert second.outcome == "superseded" and second.run.id > first.id
    assert second.cancelled is not None
    old = await store.get(first.id)
    assert old == second.cancelled
    assert (old.phase, old.finished_at, old.error) == (
        "cancelled", NOW + 2, f"superseded by run {second.run.id}")
    assert await store.active() == second.run


async def test_a_targeted_run_warms_its_urls_at_once(store: RunStore) -> None:
    created = await store.create("purge", ["/a", "/b", "/a"], NOW)
    assert created.outcome == "started"
    assert (created.run.scope, created.run.phase) == ("urls", "warm")
    assert created.run.counts == Counts(total=2)
    assert created.visits == [Visit("/a", 0), Visit("/b", 0)]


async def test_urls_of_any_spelling_are_kept_as_given(store: RunStore) -> None:
    odd = ["https://example.com/caf\u00e9", 'https://example.com/?q="x"&y=\\', "/\u2603"]
    run_id = await collecting(store, odd)
    for url in odd:
        recorded = await store.record(run_id, url, 0, "warmed", NOW + 1)
        assert recorded.counted is True, url
    assert (await store.get(run_id)).counts.warmed == 3  # type: ignore[union-attr]


async def test_a_targeted_run_merges_into_the_active_run(store: RunStore) -> None:
    run_id = await collecting(store, ["/a", "/b"])
    await store.record(run_id, "/a", 0, "warmed", NOW)
    merged = await store.create("purge", ["/a", "/b", "/c"], NOW + 1)
    assert merged.outcome == "merged" and merged.run.id == run_id
    assert merged.visits == [Visit("/a", 1), Visit("/b", 1), Visit("/c", 0)]  # /b: now
    assert merged.run.counts == Counts(total=3)
    assert (await store.record(run_id, "/a", 0, "warmed", NOW + 2)).counted is False
    assert (await store.record(run_id, "/a", 1, "warmed", NOW + 2)).counted is True
    assert (await store.record(run_id, "/b", 0, "warmed", NOW + 2)).counted is False
    assert (await store.record(run_id, "/b", 1, "warmed", NOW + 2)).counted is True


async def test_a_full_run_superseding_a_targeted_one_carries_its_open_urls(
        store: RunStore) -> None:
    targeted = await store.create("purge", ["/a", "/b", "/c"], NOW)
    await store.record(targeted.run.id, "/a", 0, "warmed", NOW)
    full = await store.create("deploy", None, NOW + 1, replace=False)
    assert full.outcome == "superseded"
    assert full.visits == [Visit("/b", 0), Visit("/c", 0)]
    assert full.run.phase == "collect" and full.run.counts.total == 2
    assert await store.claim_collect(full.run.id, "w1", NOW + 1)
    collected = await store.set_total(full.run.id, "w1", ["/", "/b", "/a"], NOW + 2)
    assert collected is not None
    assert collected.visits == [Visit("/", 0), Visit("/a", 0)]
    assert collected.run.counts.total == 4


async def test_targeted_runs_need_urls(store: RunStore) -> None:
    with pytest.raises(ValueError, match="at least one URL"):
        await store.create("purge", [], NOW)


async def test_concurrent_creates_leave_exactly_one_active_run(
        target: tuple[str, str], store: RunStore) -> None:
    other = await open_store(target)
    try:
        results = await asyncio.gather(*(
            s.create("manual", None, NOW, replace=False) for s in (store, other) * 4))
    finally:
        await other.aclose()
    assert sorted(r.outcome for r in results) == ["busy"] * 7 + ["started"]
    assert [run.phase for run in await store.recent()] == ["collect"]


# --- collect -----------------------------------------------------------------------------

async def test_collect_is_claimed_by_one_worker_and_a_stalled_one_is_taken_over(
        store: RunStore) -> None:
    run_id = (await store.create("manual", None, NOW)).run.id
    assert await store.claim_collect(run_id, "w1", NOW)
    assert not await store.claim_collect(run_id, "w2", NOW + COLLECT_STALL)
    assert await store.claim_collect(run_id, "w2", NOW + COLLECT_STALL + 1)
    assert await store.set_total(run_id, "w1", ["/a"], NOW + 200) is None
    collected = await store.set_total(run_id, "w2", ["/a", "/b"], NOW + 200,
                                      skipped={"feed": 1, "other_host": 3})
    assert collected is not None
    assert collected.run.phase == "warm"
    assert collected.run.counts == Counts(total=2, skipped=4)
    assert collected.visits == [Visit("/a", 0), Visit("/b", 0)]
    assert await store.set_total(run_id, "w2", ["/c"], NOW + 201, skipped={"file": 9}) is None
    assert await store.skipped_reasons(run_id) == {"other_host": 3, "feed": 1}
    assert not await store.claim_collect(run_id, "w3", NOW + 999)
    assert not await store.claim_collect(12345, "w1", NOW)


async def test_skipped_reasons_are_kept_per_run_most_first(store: RunStore) -> None:
    first = await collecting(store, ["/a"])
    assert await store.skipped_reasons(first) == {}
    created = await store.create("manual", None, NOW + 1)
    assert await store.claim_collect(created.run.id, "w1", NOW + 1)
    reasons = {"query": 2, "admin": 5, "file": 2, "feed": 0, "other_host": 54}
    collected = await store.set_total(created.run.id, "w1", ["/b"], NOW + 1, skipped=reasons)
    assert collected is not None and collected.run.counts.skipped == 63
    got = await store.skipped_reasons(created.run.id)
    assert list(got.items()) == [("other_host", 54), ("admin", 5), ("file", 2), ("query", 2)]
    assert await store.skipped_reasons(first) == {} and await store.skipped_reasons(98765) == {}
    assert await store.get(created.run.id) == collected.run


async def test_a_negative_skipped_count_is_refused_and_changes_nothing(store: RunStore) -> None:
    created = await store.create("manual", None, NOW)
    assert await store.claim_collect(created.run.id, "w1", NOW)
    with pytest.raises(ValueError, match="feed"):
        await store.set_total(created.run.id, "w1", ["/a"], NOW, skipped={"feed": -1})
    run = await store.get(created.run.id)
    assert run is not None and run.phase == "collect"
    assert await store.skipped_reasons(created.run.id) == {}


async def test_collecting_thousands_of_urls(store: RunStore) -> None:
    urls = [f"/page/{n}" for n in range(5000)]
    run_id = await collecting(store, urls)
    run = await store.get(run_id)
    assert run is not None and run.counts.total == 5000


# --- record ------------------------------------------------------------------------------

async def test_each_url_counts_once_and_the_last_one_finishes_the_run(store: RunStore) -> None:
    run_id = await collecting(store, ["/a", "/b", "/c"])
    assert (await store.record(run_id, "/a", 0, "warmed", NOW)).counted
    assert not (await store.record(run_id, "/a", 0, "warmed", NOW)).counted
    assert not (await store.record(run_id, "/elsewhere", 0, "warmed", NOW)).counted
    await store.record(run_id, "/b", 0, "not_modified", NOW)
    last = await store.record(run_id, "/c", 0, "failed", NOW + 9)
    assert last.run.counts == Counts(total=3, warmed=1, not_modified=1, failed=1)
    assert (last.run.phase, last.run.finished_at) == ("done", NOW + 9)
    assert await store.get(run_id) == last.run
    assert await store.active() is None
    assert await store.urls(run_id, "failed") == ["/c"]
    with pytest.raises(ValueError, match="'lost'"):
        await store.urls(run_id, "lost")  # type: ignore[arg-type]
    assert not (await store.record(run_id, "/c", 1, "warmed", NOW + 10)).counted


async def test_pages_not_stored_settle_with_their_reasons_tallied(store: RunStore) -> None:
    urls = ["/a", "/b", "/c", "/d", "/e", "/f"]
    run_id = await collecting(store, urls)
    for url, reason in [("/a", "set-cookie"), ("/b", "private"), ("/c", "set-cookie"),
                        ("/d", "no-store")]:
        assert (await store.record(run_id, url, 0, "not_stored", NOW, detail=reason)).counted
    assert not (await store.record(run_id, "/a", 0, "not_stored", NOW, detail="x")).counted
    await store.record(run_id, "/e", 0, "failed", NOW, detail="status 500")
    last = await store.record(run_id, "/f", 0, "warmed", NOW + 1, detail="ignored")
    assert last.run.counts == Counts(total=6, warmed=1, not_stored=4, failed=1)
    assert (last.run.phase, last.run.counts.settled) == ("done", 6)
    assert await store.get(run_id) == last.run
    assert await store.not_stored_reasons(run_id) == {"set-cookie": 2, "no-store": 1,
                                                      "private": 1}
    assert list(await store.not_stored_reasons(run_id)) == ["set-cookie", "no-store", "private"]
    assert await store.urls(run_id, "not_stored") == ["/a", "/b", "/c", "/d"]
    assert await store.not_stored_reasons(987654) == {}
    assert await store.not_stored_urls(run_id) == {"no-store": ["/d"], "private": ["/b"],
                                                   "set-cookie": ["/a", "/c"]}
    assert await store.not_stored_urls(run_id, 1) == {"no-store": ["/d"], "private": ["/b"],
                                                      "set-cookie": ["/a"]}
    assert await store.not_stored_urls(987654) == {}


async def test_a_not_stored_reason_is_cleared_when_the_url_is_queued_again(
        store: RunStore) -> None:
    run_id = await collecting(store, ["/a", "/b", "/c"])
    await store.record(run_id, "/a", 0, "not_stored", NOW, detail="set-cookie")
    await store.record(run_id, "/b", 0, "not_stored", NOW)
    assert await store.not_stored_reasons(run_id) == {"": 1, "set-cookie": 1}
    merged = await store.create("purge", ["/a"], NOW + 1)
    assert (merged.outcome, merged.run.counts.not_stored) == ("merged", 1)
    assert await store.not_stored_reasons(run_id) == {"": 1}
    again = await store.record(run_id, "/a", 1, "not_stored", NOW + 2, detail="private")
    assert again.counted and again.run.counts.not_stored == 2
    assert await store.not_stored_reasons(run_id) == {"": 1, "private": 1}


async def test_a_stopgap_page_is_revisited_until_it_is_rewarmed(store: RunStore) -> None:
    run_id = await collecting(store, ["/a", "/b"])
    first = await store.record(run_id, "/a", 0, "stopgap", NOW)
    assert (first.revisit, first.revisit_at) == (Visit("/a", 1), NOW + 20)
    await store.record(run_id, "/b", 0, "warmed", NOW)
    pending = await store.get(run_id)
    assert pending is not None and pending.phase == "warm"
    assert pending.counts.stopgap_pending == 1
    second = await store.record(run_id, "/a", 1, "stopgap", NOW + 20)
    assert second.revisit == Visit("/a", 2)
    third = await store.record(run_id, "/a", 2, "warmed", NOW + 40)
    assert third.run.counts == Counts(total=2, warmed=1, rewarmed=1)
    assert third.run.phase == "done"


async def test_concurrent_records_from_two_processes_lose_no_count(
        target: tuple[str, str], store: RunStore) -> None:
    urls = [f"/p{n}" for n in range(40)]
    run_id = await collecting(store, urls)
    other = await open_store(target)
    try:
        deliveries = [s.record(run_id, url, 0, "warmed", NOW)
                      for url in urls for s in (store, other)]
        recorded = await asyncio.gather(*deliveries)
    finally:
        await other.aclose()
    assert sum(r.counted for r in recorded) == 40
    run = await store.get(run_id)
    assert run is not None
    assert (run.phase, run.counts) == ("done", Counts(total=40, warmed=40))


async def test_recording_for_an_unknown_run_names_it(store: RunStore) -> None:
    with pytest.raises(LookupError, match="no warm run 999"):
        await store.record(999, "/a", 0, "warmed", NOW)


# --- finish, cancel, listing ---------------------------------------------------------------

async def test_finish_and_cancel_end_an_active_run_once(store: RunStore) -> None:
    run_id = (await store.create("daily", None, NOW)).run.id
    failed = await store.finish(run_id, "failed", NOW + 3, "sitemap: entity expansion refused")
    assert failed is not None
    assert (failed.phase, failed.error, failed.finished_at) == (
        "failed", "sitemap: entity expansion refused", NOW + 3)
    assert await store.finish(run_id, "failed", NOW + 4) is None
    assert await store.cancel(run_id, NOW + 4) is None
    assert await store.get(run_id) == failed
    targeted = (await store.create("edit", ["/a"], NOW + 5)).run
    with pytest.raises(ValueError, match="still open"):
        await store.finish(targeted.id, "done", NOW + 6)
    cancelled = await store.cancel(targeted.id, NOW + 6)
    assert cancelled is not None and cancelled.phase == "cancelled"
    assert not (await store.record(targeted.id, "/a", 0, "warmed", NOW + 7)).counted
    assert await store.cancel(4242, NOW) is None


async def test_recent_lists_newest_first(store: RunStore) -> None:
    ids = [(await store.create("manual", None, NOW + n)).run.id for n in range(3)]
    assert [run.id for run in await store.recent()] == ids[::-1]
    assert [run.id for run in await store.recent(2)] == ids[:0:-1]
    assert [run.id for run in await store.recent(0)] == ids[-1:]
    assert await store.get(987654) is None


async def test_runs_survive_a_restart(target: tuple[str, str], store: RunStore) -> None:
    run_id = await collecting(store, ["/a", "/b", "/c"])
    await store.record(run_id, "/a", 0, "stopgap", NOW)
    await store.record(run_id, "/c", 0, "not_stored", NOW, detail="set-cookie")
    await store.aclose()
    reopened = await open_store(target)
    try:
        run = await reopened.active()
        assert run is not None and run.id == run_id
        assert run.counts == Counts(total=3, stopgap_pending=1, not_stored=1)
        assert await reopened.not_stored_reasons(run_id) == {"set-cookie": 1}
        assert (await reopened.record(run_id, "/a", 1, "warmed", NOW + 20)).counted
        assert not (await reopened.record(run_id, "/a", 1, "warmed", NOW + 20)).counted
        done = await reopened.record(run_id, "/b", 0, "warmed", NOW + 21)
        assert done.run.phase == "done"
    finally:
        await reopened.aclose()


# --- outages: a collect that failed, the URLs that failed last ---------------------------

async def test_a_failed_collect_keeps_the_run_collecting_for_any_worker(
        store: RunStore) -> None:
    created = await store.create("daily", None, NOW)
    assert await store.claim_collect(created.run.id, "w1", NOW)
    assert await store.collect_failed(created.run.id, "w2", "not mine") is None
    waiting = await store.collect_failed(created.run.id, "w1", "discovery failed (try 1)")
    assert waiting is not None and waiting == await store.get(created.run.id)
    assert (waiting.phase, waiting.error, waiting.collect_owner) == (
        "collect", "discovery failed (try 1)", None)
    assert await store.claim_collect(created.run.id, "w2", NOW + 30)  # no stall to wait out
    collected = await store.set_total(created.run.id, "w2", ["a"], NOW + 31)
    assert collected is not None and (collected.run.phase, collected.run.error) == (
        "warm", None)
    assert await store.collect_failed(created.run.id, "w2", "late") is None


async def settle(store: RunStore, run_id: int, results: dict[str, tuple[str, str | None]]
                 ) -> None:
    for url, (result, detail) in results.items():
        recorded = await store.record(run_id, url, 0, result, NOW, detail=detail)  # type: ignore[arg-type]
        assert recorded.counted


async def test_last_failures_judge_each_url_by_its_newest_settled_row(
        store: RunStore) -> None:
    old = await collecting(store, ["a", "b", "c", "d"])
    await settle(store, old, {"a": ("failed", "status 502"), "b": ("failed", "status 502"),
                              "c": ("failed", "status 404"), "d": ("warmed", None)})
    newer = (await store.create("recovery", ["b", "d", "e"], NOW + 60)).run.id
    await settle(store, newer, {"b": ("warmed", None), "d": ("failed", "status 504")})
    # e is still queued in the newer run: its older state (none) decides
    assert await store.last_failures(NOW) == [("d", "status 504"), ("a", "status 502"),
                                              ("c", "status 404")]
    assert await store.last_failures(NOW + 1) == [("d", "status 504")]
    assert await store.last_failures(NOW, limit=1) == [("d", "status 504")]
    assert (await store.get(newer)).reason == "recovery"  # type: ignore[union-attr]


async def test_a_failure_waiting_in_the_active_run_is_not_listed_until_that_run_is_cancelled(
        store: RunStore) -> None:
    old = await collecting(store, ["a", "b"])
    await settle(store, old, {"a": ("failed", "status 502"), "b": ("failed", "status 502")})
    await store.finish(old, "done", NOW)
    going = (await store.create("recovery", ["a"], NOW + 60)).run.id
    assert await store.last_failures(NOW) == [("b", "status 502")]  # a waits in the run
    await store.cancel(going, NOW + 61)
    assert await store.last_failures(NOW) == [("a", "status 502"), ("b", "status 502")]

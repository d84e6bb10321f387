"""The ``DeadlineStore`` contract: one suite, run against SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests import deadline_backends
from tests.deadline_backends import open_store

from stoker.schedule.deadlines import DUE_SLACK
from stoker.schedule.store import Deadline, DeadlineStore

# the fixtures every deadline test module shares
backend, target, store = (deadline_backends.backend, deadline_backends.target,
                          deadline_backends.store)
pg_deadline_schema = deadline_backends.pg_deadline_schema

REPO_ROOT = Path(__file__).resolve().parents[2]
T = 1_700_000_000.0




@pytest.fixture
async def other(backend: str, target: str, store: DeadlineStore) -> AsyncIterator[DeadlineStore]:
    """A second handle on the same database (another process's view)."""
    opened = await open_store(backend, target)
    yield opened
    await opened.aclose()


async def get(store: DeadlineStore, name: str) -> Deadline | None:
    return next((row for row in await store.list() if row.name == name), None)


# --- arming ---------------------------------------------------------------------------

async def test_arm_creates_the_row_and_each_mode_persists(store: DeadlineStore) -> None:
    assert await store.list() == []
    assert await store.next_due() is None
    first = await store.arm("rewarm", "debounced", T, 60, 300)
    assert first == Deadline("rewarm", due_at=T + 60, first_armed_at=T)
    await store.arm("rewarm", "debounced", T + 250, 60, 300)
    await store.arm("stats_flush", "earliest", T, 30)
    await store.arm("stats_flush", "earliest", T + 10, 30)
    await store.arm("refresh", "replace", T, 86_400)
    await store.arm("refresh", "replace", T + 5, 86_400)
    assert [(r.name, r.due_at, r.first_armed_at) for r in await store.list()] == [
        ("refresh", T + 86_405, T + 5),
        ("rewarm", T + 300, T),
        ("stats_flush", T + 30, T),
    ]
    assert await store.next_due() == T + 30


async def test_arm_refuses_nonsense_and_writes_nothing(store: DeadlineStore) -> None:
    with pytest.raises(ValueError, match="max_wait is required for mode 'debounced'"):
        await store.arm("rewarm", "debounced", T, 60)
    assert await store.list() == []


# --- claiming -------------------------------------------------------------------------

async def test_claim_only_when_due_within_the_slack_or_forced(store: DeadlineStore) -> None:
    assert await store.claim("rewarm", "a", T, 30) is None  # no row
    await store.arm("rewarm", "earliest", T, 60)
    assert await store.claim("rewarm", "a", T + 60 - 2 * DUE_SLACK, 30) is None
    got = await store.claim("rewarm", "a", T + 60 - DUE_SLACK / 2, 30)
    assert got is not None
    assert (got.owner, got.claimed_until, got.attempts) == ("a", T + 90 - DUE_SLACK / 2, 1)
    await store.arm("refresh", "earliest", T, 3_600)
    assert (await store.claim("refresh", "a", T, 30, force=True)) is not None


async def test_one_of_many_concurrent_claims_wins(
        store: DeadlineStore, other: DeadlineStore) -> None:
    await store.arm("rewarm", "earliest", T, 0)
    results = await asyncio.gather(
        *(handle.claim("rewarm", f"owner-{i}", T, 30)
          for i, handle in enumerate([store, other] * 8)))
    winners = [row for row in results if row is not None]
    assert len(winners) == 1
    assert await get(other, "rewarm") == winners[0]


async def test_an_expired_claim_is_taken_over_and_the_old_owner_cannot_finish(
        store: DeadlineStore, other: DeadlineStore) -> None:
    await store.arm("job_reap", "earliest", T, 0)
    assert await store.claim("job_reap", "dies", T, 30) is not None
    assert await other.claim("job_reap", "b", T + 29, 30) is None
    assert await store.next_due() == T + 30
    taken = await other.claim("job_reap", "b", T + 30, 30)
    assert taken is not None and taken.attempts == 2
    assert not await store.complete("job_reap", "dies", T + 31)
    assert not await store.fail("job_reap", "dies", T + 31, 60, "late")
    assert await other.complete("job_reap", "b", T + 32)
    assert await get(store, "job_reap") == Deadline("job_reap", completed_at=T + 32)


# --- completing and failing -----------------------------------------------------------

async def test_complete_disarms(store: DeadlineStore) -> None:
    await store.arm("stats_flush", "earliest", T, 0)
    assert await store.claim("stats_flush", "a", T, 30) is not None
    assert await store.complete("stats_flush", "a", T + 1)
    assert await get(store, "stats_flush") == Deadline("stats_flush", completed_at=T + 1)
    assert await store.next_due() is None
    assert not await store.complete("stats_flush", "a", T + 2)  # not held any more


async def test_an_arm_during_a_run_is_not_lost(
        store: DeadlineStore, other: DeadlineStore) -> None:
    await store.arm("rewarm", "debounced", T, 60, 300)
    assert await store.claim("rewarm", "a", T + 60, 30) is not None
    await other.arm("rewarm", "debounced", T + 70, 60, 300)  # a purge while the run goes
    assert await store.complete("rewarm", "a", T + 80)
    after = await get(store, "rewarm")
    assert after is not None
    assert (after.due_at, after.first_armed_at, after.owner) == (T + 130, T + 70, None)
    assert await store.claim("rewarm", "a", T + 130, 30) is not None


async def test_fail_records_the_error_and_retries_later(store: DeadlineStore) -> None:
    await store.arm("l2_reclaim", "earliest", T, 0)
    assert await store.claim("l2_reclaim", "a", T, 30) is not None
    assert await store.fail("l2_reclaim", "a", T + 2, 600, "OSError: disk full")
    after = await get(store, "l2_reclaim")
    assert after == Deadline("l2_reclaim", due_at=T + 602, first_armed_at=T + 2, attempts=1,
                             last_error="OSError: disk full")
    assert await store.claim("l2_reclaim", "a", T + 500, 30) is None
    again = await store.claim("l2_reclaim", "a", T + 602, 30)
    assert again is not None and again.attempts == 2
    assert await store.complete("l2_reclaim", "a", T + 603)
    cleared = await get(store, "l2_reclaim")
    assert cleared is not None and (cleared.last_error, cleared.attempts) == (None, 0)


# --- restarts and processes -----------------------------------------------------------

async def test_a_deadline_armed_before_a_restart_is_still_armed_after(
        backend: str, target: str, store: DeadlineStore) -> None:
    await store.arm("rewarm", "debounced", T, 60, 300)
    await store.aclose()
    reopened = await open_store(backend, target)
    try:
        assert await reopened.next_due() == T + 60
        assert await reopened.claim("rewarm", "after-restart", T + 60, 30) is not None
    finally:
        await reopened.aclose()


# Each process claims every deadline it can, starting at a different one; once it
# holds its first it waits until every process holds one (marker files next to
# ``go``), so they race through the rest together by construction, not by luck.
CLAIMER = """
import asyncio, json, os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from tests.deadline_backends import open_store

async def main(backend, target, go, root, names, now, processes):
    store = await open_store(backend, target)
    print("ready", flush=True)
    go = Path(go)
    while not go.exists():
        await asyncio.sleep(0.005)
    got = []
    for name in json.loads(names):
        if await store.claim(name, str(os.getpid()), float(now), 60) is not None:
            got.append(name)
            if len(got) == 1:
                (go.parent / f"holds-{os.getpid()}").touch()
                while len(list(go.parent.glob("holds-*"))) < int(processes):
                    await asyncio.sleep(0.005)
    await store.aclose()
    print(json.dumps(got), flush=True)

asyncio.run(main(*sys.argv[1:8]))
"""
PROCESSES = 3


async def test_processes_claiming_at_once_run_each_deadline_once(
        backend: str, target: str, store: DeadlineStore, tmp_path: Path) -> None:
    names = [f"purpose-{n}" for n in range(40)]
    for name in names:
        await store.arm(name, "earliest", T, 0)
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, backend, target, str(go), str(REPO_ROOT),
             json.dumps(names[i:] + names[:i]), str(T), str(PROCESSES)],
            stdout=subprocess.PIPE, text=True)
        for i in range(0, len(names), len(names) // PROCESSES)[:PROCESSES]
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        go.touch()
        outputs = [proc.communicate(timeout=60)[0] for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    claimed = [name for out in outputs for name in json.loads(out.strip().splitlines()[-1])]
    assert sorted(claimed) == sorted(names)  # every one claimed, none twice
    assert {row.owner for row in await store.list()} == {str(proc.pid) for proc in procs}

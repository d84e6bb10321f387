"""The audit policy: refused calls rate-limited per client (injected clock, real SQLite)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.priorities import linux_only, thread_priority

from stoker.admin.audit import OTHER_CLIENTS, RefusalAudit, RefusalWindow, admit_refusal
from stoker.backends.sqlite.audit_store import SqliteAuditStore
from stoker.clock import FakeClock
from stoker.purge.audit import record_safely


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(tmp_path: Path, clock: FakeClock) -> AsyncIterator[SqliteAuditStore]:
    store = await SqliteAuditStore.open(tmp_path / "stoker.db", clock)
    try:
        yield store
    finally:
        await store.close()


def test_admit_refusal_records_up_to_the_limit_then_counts() -> None:
    window, recorded = admit_refusal(None, 100.0, 2)
    assert (window, recorded) == (RefusalWindow(100.0, recorded=1), True)
    window, recorded = admit_refusal(window, 101.0, 2)
    assert (window, recorded) == (RefusalWindow(100.0, recorded=2), True)
    window, recorded = admit_refusal(window, 102.0, 2)
    assert (window, recorded) == (RefusalWindow(100.0, recorded=2, suppressed=1), False)


def test_a_window_ends_after_its_period_or_when_the_clock_goes_back() -> None:
    window = RefusalWindow(100.0)
    assert not window.ended(159.9, 60.0)
    assert window.ended(160.0, 60.0)
    assert window.ended(99.0, 60.0)


async def _refuse(refusals: RefusalAudit, client: str, times: int) -> None:
    for _ in range(times):
        await refusals.refused(client=client, actor="token:0123456789ab", action="purge",
                               target={"path": "/api/purge"})


async def test_a_flood_adds_at_most_limit_rows_then_one_summary(
        store: SqliteAuditStore, clock: FakeClock) -> None:
    refusals = RefusalAudit(store, clock, limit=3, period=60.0)
    await _refuse(refusals, "10.0.0.1", 50)
    await _refuse(refusals, "10.0.0.2", 1)
    clock.advance(30)
    await refusals.flush()  # the window is still open: no summary yet
    assert len(await store.recent(100)) == 4
    clock.advance(30)
    await refusals.flush()
    await refusals.flush()  # written once
    rows = await store.recent(100)
    [summary, *denied] = rows
    assert (summary["actor"], summary["outcome"], summary["count"]) == (
        "client:10.0.0.1", "suppressed", 47)
    assert summary["target"]["summary"] == "47 more refused calls suppressed"
    assert [(row["target"]["client"], row["outcome"]) for row in denied] == [
        ("10.0.0.2", "denied")] + [("10.0.0.1", "denied")] * 3


async def test_the_next_window_records_again(store: SqliteAuditStore, clock: FakeClock) -> None:
    refusals = RefusalAudit(store, clock, limit=2, period=60.0)
    await _refuse(refusals, "10.0.0.1", 3)
    clock.advance(60)
    await _refuse(refusals, "10.0.0.1", 1)
    outcomes = [(row["outcome"], row["count"]) for row in await store.recent(100)]
    assert outcomes == [("denied", None), ("suppressed", 1), ("denied", None), ("denied", None)]


async def test_clients_beyond_the_cap_share_one_window(store: SqliteAuditStore,
                                                       clock: FakeClock) -> None:
    refusals = RefusalAudit(store, clock, limit=2, period=60.0, max_clients=1)
    await _refuse(refusals, "10.0.0.1", 1)
    for address in range(2, 12):
        await _refuse(refusals, f"10.0.1.{address}", 1)
    clock.advance(60)
    await refusals.flush()
    rows = await store.recent(100)
    assert len(rows) == 4  # 10.0.0.1, two of the others, one summary
    assert rows[0]["actor"] == f"client:{OTHER_CLIENTS}" and rows[0]["count"] == 8


class BrokenAuditor:
    async def record(self, *, actor: str, action: str, target: Mapping[str, Any],
                     count: int | None, outcome: str) -> None:
        raise OSError("disk full")


async def test_a_failing_audit_write_is_one_error_line_never_raised(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        await record_safely(BrokenAuditor(), actor="anonymous", action="purge", target={},
                            count=1, outcome="ok")
    [line] = caplog.records
    assert "disk full" in line.getMessage() and line.exc_info is None


@linux_only
async def test_an_admin_change_is_recorded_at_the_loops_priority(store: SqliteAuditStore) -> None:
    """The admin call waits for its record: the store's thread is not one of the niced
    background ones, so a busy loop does not starve it."""
    assert await store._db.run(lambda conn: thread_priority()) == thread_priority()

"""The audit log through an outage of its store: a real SQLite audit store behind a switch
that makes its inserts fail (the fault), an injected clock for the retries."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stoker.backends.audit_backlog import RETRY_MOST, KeptAudit
from stoker.backends.audit_records import Row
from stoker.backends.sqlite.audit_store import SqliteAuditStore
from stoker.clock import FakeClock


class Switched:
    """``store`` whose inserts raise while ``down``; counts the tries."""

    def __init__(self, store: SqliteAuditStore) -> None:
        self.store = store
        self.down = False
        self.tries = 0

    async def append(self, values: Row) -> None:
        self.tries += 1
        if self.down:
            raise ConnectionRefusedError("the audit database is down")
        await self.store.append(values)

    async def recent(self, limit: int = 100, *, action: str | None = None,
                     before: int | None = None) -> list[dict[str, Any]]:
        return await self.store.recent(limit, action=action, before=before)

    async def prune(self, before: float, keep: int) -> int:
        return await self.store.prune(before, keep)

    async def close(self) -> None:
        await self.store.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(auto_advance=False)


@pytest.fixture
async def switched(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Switched]:
    store = Switched(await SqliteAuditStore.open(tmp_path / "stoker.db", clock))
    yield store


async def record(audit: KeptAudit, n: int) -> None:
    await audit.record(actor="token:0123456789ab", action="purge", target={"n": n},
                       count=n, outcome="ok")


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)
    await asyncio.sleep(0.05)  # the SQLite thread


async def advance(clock: FakeClock, seconds: float) -> None:
    """Let the writer reach its sleep, move the clock, let it run."""
    await settle()
    clock.advance(seconds)
    await settle()


def numbers(records: list[dict[str, Any]]) -> list[int]:
    return [one["target"]["n"] for one in reversed(records)]


async def test_records_refused_during_an_outage_are_written_in_order_with_their_times(
        switched: Switched, clock: FakeClock) -> None:
    audit = KeptAudit(switched, clock)
    await record(audit, 1)
    switched.down = True
    made_at = clock.now()
    await record(audit, 2)
    await advance(clock, 0.5)
    await record(audit, 3)
    assert audit.kept() == 2 and switched.tries == 2  # the third was kept, not tried
    await advance(clock, 1.0)  # the first retry: still down
    assert audit.kept() == 2
    switched.down = False
    await record(audit, 4)  # behind the kept ones, not before them
    await advance(clock, RETRY_MOST)
    assert audit.kept() == 0
    records = await audit.recent()
    assert numbers(records) == [1, 2, 3, 4]
    assert [one["at"] for one in reversed(records)][1:3] == [made_at, made_at + 0.5]
    await audit.close()


async def test_past_the_bound_the_oldest_kept_record_is_dropped_and_said(
        switched: Switched, clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    audit = KeptAudit(switched, clock, most=2)
    switched.down = True
    for n in range(1, 4):
        await record(audit, n)
    assert audit.kept() == 2
    assert any("the oldest" in r.message and r.levelno == logging.ERROR for r in caplog.records)
    switched.down = False
    await advance(clock, 1.0)
    assert numbers(await audit.recent()) == [2, 3]
    await audit.close()


async def test_close_writes_what_the_store_takes_and_names_what_it_never_took(
        tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    first = Switched(await SqliteAuditStore.open(tmp_path / "stoker.db", clock))
    audit = KeptAudit(first, clock)
    first.down = True
    await record(audit, 1)
    first.down = False
    await audit.close()  # before any retry: close writes it
    reopened = await SqliteAuditStore.open(tmp_path / "stoker.db", clock)
    assert numbers(await reopened.recent()) == [1]
    await reopened.close()
    second = Switched(await SqliteAuditStore.open(tmp_path / "other.db", clock))
    audit = KeptAudit(second, clock)
    second.down = True
    await record(audit, 2)
    await audit.close()
    assert any("1 audit records the audit log never took" in r.message for r in caplog.records)

"""The audit store's contract, on SQLite (one file) and PostgreSQL (one schema): records
appended by any member, read back newest first, a read's size capped."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from tests import node_backends
from tests.node_backends import Members

from stoker.backends import audit_records
from stoker.backends.audit_records import MAX_ITEMS, MAX_LIMIT, MAX_TEXT
from stoker.backends.postgres.audit_store import PostgresAuditStore
from stoker.backends.sqlite.audit_store import SqliteAuditStore
from stoker.clock import FakeClock
from stoker.purge.audit import AuditTrail

# the fixtures every shared-store test module uses
backend, place, members = node_backends.backend, node_backends.place, node_backends.members


async def open_audit(members: Members, clock: FakeClock) -> AuditTrail:
    async def sqlite(path: Path) -> AuditTrail:
        return await SqliteAuditStore.open(path, clock)

    async def postgres(pool: asyncpg.Pool) -> AuditTrail:
        return await PostgresAuditStore.open(pool, clock)

    return await members.open(sqlite, postgres)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def audit(members: Members, clock: FakeClock) -> AuditTrail:
    return await open_audit(members, clock)


async def record(audit: AuditTrail, n: int, target: dict[str, Any] | None = None) -> None:
    await audit.record(actor=f"token:{n}", action="purge", target=target or {"n": n},
                       count=n, outcome="ok")


async def test_records_come_back_newest_first_as_recorded(
        audit: AuditTrail, clock: FakeClock) -> None:
    target = {"tags": ["b", "a"], "path": "/a\u0000b", "nested": {"soft": True}}
    await record(audit, 1, target)
    clock.advance(5)
    await audit.record(actor="127.0.0.1", action="refused", target={}, count=None,
                       outcome="forbidden")
    rows = await audit.recent()
    assert [{key: value for key, value in row.items() if key != "id"} for row in rows] == [
        {"at": clock.now(), "actor": "127.0.0.1", "action": "refused", "target": {},
         "count": None, "outcome": "forbidden"},
        {"at": clock.now() - 5, "actor": "token:1", "action": "purge", "target": target,
         "count": 1, "outcome": "ok"}]
    assert rows[0]["id"] > rows[1]["id"]


async def test_every_member_appends_to_one_log(members: Members, clock: FakeClock) -> None:
    a, b = await open_audit(members, clock), await open_audit(members, clock)
    await record(a, 1)
    await record(b, 2)
    await record(a, 3)
    for reader in (a, b):
        assert [row["count"] for row in await reader.recent()] == [3, 2, 1]


async def test_a_read_keeps_one_action_and_pages_back_by_id(audit: AuditTrail) -> None:
    for n in range(6):
        await audit.record(actor="token:x", action="purge" if n % 2 else "warm",
                           target={}, count=n, outcome="ok")
    purges = await audit.recent(action="purge")
    assert [row["count"] for row in purges] == [5, 3, 1]
    older = await audit.recent(2, before=purges[0]["id"])
    assert [row["count"] for row in older] == [4, 3]
    assert [row["count"] for row in await audit.recent(action="purge", before=older[1]["id"])
            ] == [1]
    assert await audit.recent(action="nothing") == []


async def test_a_read_returns_at_least_one_and_at_most_max_limit(audit: AuditTrail) -> None:
    for n in range(MAX_LIMIT + 1):
        await record(audit, n)
    assert [row["count"] for row in await audit.recent(2)] == [MAX_LIMIT, MAX_LIMIT - 1]
    assert [row["count"] for row in await audit.recent(0)] == [MAX_LIMIT]
    capped = await audit.recent(MAX_LIMIT * 5)
    assert [row["count"] for row in capped] == list(range(MAX_LIMIT, 0, -1))


async def test_a_record_is_logged_once(audit: AuditTrail,
                                       caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="stoker.audit"):
        await record(audit, 4, {"tag": "x"})
    assert [r.getMessage() for r in caplog.records if r.name == "stoker.audit"] == [
        'audit: token:4 purge {"tag": "x"} -> ok (4)']


async def test_a_prune_deletes_what_is_older_than_the_age_then_beyond_the_count(
        audit: AuditTrail, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit_records, "PRUNE_CHUNK", 3)  # several statements per bound
    for n in range(10):
        await record(audit, n)
        clock.advance(10)
    now = clock.now()  # record n was made at now - 100 + 10 n
    assert await audit.prune(now - 55, keep=1000) == 5  # records 0..4: older than 55 s
    assert [row["count"] for row in await audit.recent()] == [9, 8, 7, 6, 5]
    assert await audit.prune(now - 55, keep=2) == 3
    assert [row["count"] for row in await audit.recent()] == [9, 8]
    assert await audit.prune(now - 1000, keep=2) == 0
    await record(audit, 10)
    assert [row["count"] for row in await audit.recent()] == [10, 9, 8]  # appends go on


async def test_a_long_target_is_stored_bounded(audit: AuditTrail) -> None:
    path = "/" + "a" * 8191
    await record(audit, 1, {"path": path, "urls": [f"/u{i}" for i in range(500)]})
    [row] = await audit.recent()
    assert row["target"]["path"] == f"/{'a' * (MAX_TEXT - 1)}… (8192 characters)"
    assert row["target"]["urls"] == [f"/u{i}" for i in range(MAX_ITEMS)] + [
        f"… {500 - MAX_ITEMS} more"]

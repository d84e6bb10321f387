"""A flood of refused ``PURGE`` requests with long paths: counted per client (a bounded
number of audit rows and log lines per minute), each row's target bounded; the audit
log pruned to its age and row bounds by the periodic chore, with and without a warmer."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import httpx
import pytest
from tests.integration.conftest import Origin, running_proxy
from tests.integration.warm_site import warming

from stoker.admin.audit import REFUSALS_PER_WINDOW, WINDOW
from stoker.backends.audit_records import MAX_TEXT
from stoker.clock import FakeClock, SystemClock

FLOOD = 2000
LONG_PATH = "/" + "p" * 8191


def database_bytes(data_dir: Path) -> int:
    return sum(path.stat().st_size for path in data_dir.glob("stoker.db*"))


async def test_refused_purges_are_counted_per_client_not_stored_one_by_one(
        origin: Origin, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data_dir = tmp_path / "d"
    clock = FakeClock(start=SystemClock().now(), auto_advance=False)
    async with running_proxy(origin.url, data_dir, clock=clock,
                             purge_allow=["10.0.0.0/8"]) as proxy:
        before = database_bytes(data_dir)
        limits = httpx.Limits(max_connections=20)
        with caplog.at_level(logging.INFO, logger="stoker"):
            async with httpx.AsyncClient(base_url=proxy.url, limits=limits,
                                         timeout=60) as client:
                gate = asyncio.Semaphore(20)

                async def purge() -> int:
                    async with gate:
                        return (await client.request("PURGE", LONG_PATH)).status_code

                statuses = await asyncio.gather(*(purge() for _ in range(FLOOD)))
            grown = database_bytes(data_dir) - before
            within = await proxy.stoker.audit.recent(1000)
            clock.advance(WINDOW)
            await proxy.stoker.prune_audit()  # the periodic chore writes the summary
            after = await proxy.stoker.audit.recent(1000)
    lines = [r for r in caplog.records if r.name.startswith("stoker") and (
        "purge-method" in r.getMessage() or "refused calls" in r.getMessage())]
    assert set(statuses) == {403}
    assert len(within) == REFUSALS_PER_WINDOW
    assert all(r["outcome"] == "denied" and r["actor"] == "purge-method:127.0.0.1"
               and r["target"]["status"] == 403 for r in within)
    assert max(len(url) for r in within for url in r["target"]["urls"]) < MAX_TEXT + 40
    [summary] = [r for r in after if r["outcome"] == "suppressed"]
    assert (summary["actor"], summary["count"]) == ("client:127.0.0.1",
                                                    FLOOD - REFUSALS_PER_WINDOW)
    assert len(lines) <= REFUSALS_PER_WINDOW + 2  # rows, one warning, one summary
    assert grown < 512 * 1024, grown  # was 19.4 MB: one 8 KB row per request


async def test_the_chore_prunes_the_audit_log_to_its_age_and_row_bounds(
        origin: Origin, tmp_path: Path) -> None:
    clock = FakeClock(start=SystemClock().now(), auto_advance=False)
    async with running_proxy(origin.url, tmp_path / "d", clock=clock, audit_max_age="1d",
                             audit_max_rows=5) as proxy:
        audit = proxy.stoker.audit
        for n in range(3):
            await audit.record(actor="a", action="old", target={}, count=n, outcome="ok")
        clock.advance(86_401)  # past audit_max_age, and wakes the maintenance loop

        async def loop_pruned() -> None:
            while await audit.recent(1000):
                await asyncio.sleep(0.01)

        await asyncio.wait_for(loop_pruned(), 30)
        for n in range(7):
            await audit.record(actor="a", action="new", target={}, count=n, outcome="ok")
        pruned = await proxy.stoker.prune_audit()
        kept = await audit.recent(1000)
    assert pruned == 2  # beyond audit_max_rows
    assert [(r["action"], r["count"]) for r in kept] == [("new", n) for n in range(6, 1, -1)]


async def test_with_a_warmer_the_audit_prune_is_a_deadline_of_the_ticker(
        origin: Origin, tmp_path: Path) -> None:
    async with warming(origin.url, tmp_path / "d", audit_max_rows=2) as site:
        for n in range(4):
            await site.stoker.audit.record(actor="a", action="x", target={}, count=n,
                                           outcome="ok")
        deadlines = {d.name: d for d in await site.service.ticker.status()}
        ran = await site.service.ticker.force("audit_prune")
        kept = await site.stoker.audit.recent(1000)
    assert deadlines["audit_prune"].due_at is not None  # armed at start, re-armed each run
    assert ran == "done"
    assert [r["count"] for r in kept] == [3, 2]

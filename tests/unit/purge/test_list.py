"""The purge list (fetch/purge races, tiers applying marks) and purge events (subscribers)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest
from tests.entries import make_entry

from stoker.clock import FakeClock
from stoker.purge.events import PurgeEvents
from stoker.purge.list import (
    L1,
    L2,
    MemoryPurgeLog,
    PurgeList,
    PurgeMark,
    Verdict,
    judge,
    screen,
)
from stoker.purge.scope import PurgeScope

ENTRY = make_entry("https://example.com/blog/1", tags=("post-1", "posts"))


def test_nothing_recorded_since_the_fetch_began() -> None:
    ledger = PurgeList(FakeClock())
    since = ledger.seq
    assert ledger.check(since, ENTRY) is None
    ledger.record(soft=False, now=5.0, tags=["post-1"])
    assert ledger.check(ledger.seq, ENTRY) is None  # a fetch that began after the purge


@pytest.mark.parametrize(("mark", "covered"), [
    ({"keys": [ENTRY.primary_key]}, True),
    ({"keys": ["v1|GET|https://example.com/blog/10"]}, False),
    ({"prefixes": ["https://example.com/blog/"]}, True),
    ({"prefixes": ["https://example.com/shop/"]}, False),
    ({"tags": ["post-1"]}, True),
    ({"tags": ["post-10", "post"]}, False),
    ({"everything": True}, True),
])
def test_a_hard_purge_since_the_fetch_refuses_covered_entries(mark: dict[str, object],
                                                              covered: bool) -> None:
    ledger = PurgeList(FakeClock())
    since = ledger.seq
    ledger.record(soft=False, now=5.0, **mark)  # type: ignore[arg-type]
    assert ledger.check(since, ENTRY) == (Verdict(hard=True, stale_from=5.0) if covered
                                          else None)


def test_soft_purges_give_the_earliest_time_and_hard_wins() -> None:
    marks = [PurgeMark(1, 0.0, 30.0, True, tags=frozenset({"posts"})),
             PurgeMark(2, 0.0, 20.0, True, tags=frozenset({"post-1"})),
             PurgeMark(3, 0.0, 10.0, True, tags=frozenset({"other"}))]
    assert judge(marks, 0, ENTRY) == Verdict(hard=False, stale_from=20.0)
    assert judge(marks, 1, ENTRY) == Verdict(hard=False, stale_from=20.0)
    assert judge(marks, 2, ENTRY) is None
    hard = [*marks, PurgeMark(4, 0.0, 40.0, False, everything=True)]
    assert judge(hard, 0, ENTRY) == Verdict(hard=True, stale_from=40.0)


def test_forgotten_purges_make_old_fetches_invalid() -> None:
    clock = FakeClock()
    ledger = PurgeList(clock, window=60.0)
    old_fetch = ledger.seq
    ledger.record(soft=True, now=1.0, tags=["unrelated"])
    middle_fetch = ledger.seq
    clock.advance(61.0)
    ledger.record(soft=True, now=2.0, tags=["unrelated-too"])
    assert len(ledger) == 1
    assert ledger.check(old_fetch, ENTRY) == Verdict(hard=True, stale_from=0.0)
    assert ledger.check(middle_fetch, ENTRY) is None


def test_a_mark_a_tier_still_applies_is_kept_and_screens_its_reads() -> None:
    clock = FakeClock()
    purges = PurgeList(clock, window=60.0)
    purges.record(soft=False, now=1.0, tags=["post-1"])
    first = purges.latest
    purges.begin(first, (L1, L2))
    purges.record(soft=True, now=2.0, tags=["posts"])
    clock.advance(61.0)
    purges.applied(first, L1)
    assert purges.unapplied(L1) == [] and purges.unapplied(L2) == [first]
    assert len(purges) == 2  # L2 still applies the first: neither is trimmed
    assert screen([ENTRY], purges.unapplied(L2)) == []
    purges.applied(first, L2)
    assert len(purges) == 0
    assert purges.check(0, ENTRY) == Verdict(hard=True, stale_from=0.0)


def test_a_soft_mark_screens_reads_to_stale_copies() -> None:
    mark = PurgeMark(1, 0.0, 20.0, True, tags=frozenset({"posts"}))
    [softened] = screen([ENTRY], [mark])
    assert softened.fresh_until == 20.0
    assert screen([ENTRY], []) == [ENTRY]


def test_the_memory_log_numbers_marks_and_trims_the_oldest() -> None:
    log = MemoryPurgeLog()
    marks = [log.append(PurgeMark(0, 0.0, float(n), False, everything=True)) for n in range(3)]
    assert [mark.seq for mark in marks] == [1, 2, 3] and log.seq == 3
    assert log.since(1) == marks[1:]
    log.trim(2)
    assert (log.floor, log.seq) == (2, 3)
    assert log.since(0) == log.since(2) == marks[2:]


async def test_events_reach_every_subscriber_and_survive_failures(
        caplog: pytest.LogCaptureFixture) -> None:
    events = PurgeEvents()
    heard: list[tuple[PurgeScope, list[str], list[str]]] = []

    async def broken(scope: PurgeScope, keys: Sequence[str], urls: Sequence[str]) -> None:
        raise RuntimeError("subscriber bug")

    async def listener(scope: PurgeScope, keys: Sequence[str], urls: Sequence[str]) -> None:
        heard.append((scope, list(keys), list(urls)))

    events.subscribe(broken)
    unsubscribe = events.subscribe(listener)
    scope = PurgeScope(tags=("t",))
    with caplog.at_level(logging.ERROR, "stoker.purge"):
        await events.publish(scope, ["v1|https://a/x"], ["https://a/x"])
    assert heard == [(scope, ["v1|https://a/x"], ["https://a/x"])]
    assert "subscriber bug" in caplog.text
    unsubscribe()
    unsubscribe()
    await events.publish(scope, [], [])
    assert len(heard) == 1 and len(events) == 1

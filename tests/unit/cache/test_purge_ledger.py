"""The purge ledger (fetch/purge races) and purge events (subscribers)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest
from tests.entries import make_entry

from stoker.cache.events import PurgeEvents
from stoker.cache.invalidation import PurgeScope
from stoker.cache.ledger import PurgeLedger, PurgeMark, Verdict, judge
from stoker.clock import FakeClock

ENTRY = make_entry("https://example.com/blog/1", tags=("post-1", "posts"))


def test_nothing_recorded_since_the_fetch_began() -> None:
    ledger = PurgeLedger(FakeClock())
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
    ledger = PurgeLedger(FakeClock())
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
    ledger = PurgeLedger(clock, window=60.0)
    old_fetch = ledger.seq
    ledger.record(soft=True, now=1.0, tags=["unrelated"])
    middle_fetch = ledger.seq
    clock.advance(61.0)
    ledger.record(soft=True, now=2.0, tags=["unrelated-too"])
    assert len(ledger) == 1
    assert ledger.check(old_fetch, ENTRY) == Verdict(hard=True, stale_from=0.0)
    assert ledger.check(middle_fetch, ENTRY) is None


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

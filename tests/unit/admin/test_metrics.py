"""The metrics families (pure) and the origin timing histogram."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from stoker.admin.metrics import (
    Figures,
    Tally,
    combined,
    exposition,
    families,
    member_summary,
    named_others_said,
    node_of,
    said,
    tally,
)
from stoker.origin.timing import BUCKETS, OriginTiming
from stoker.purge.bus import Member


def figures(**changes: object) -> Figures:
    timing = OriginTiming()
    for seconds in (0.004, 0.02, 0.02, 3.0, 60.0):
        timing.answered(seconds)
    timing.failed()
    base: dict[str, object] = dict(
        outcomes={("hit", "", False): 7, ("miss", "", False): 2,
                  ("miss", "", True): 5, ("bypass", "bypass", False): 3,
                  ("pass", "no-store", False): 1},
        cookie_bypasses={"session": 3}, timing=timing, origin_up=True, in_flight=2,
        l1={"entries": 4, "bytes": 4096, "max_bytes": 1 << 20}, l1_evictions=1,
        l2={"entries": 9, "bytes": 9000}, l2_pending=3, l2_pending_bytes=300, l2_dropped=0,
        purge_marks=2, applying={"l1": 1, "l2": 0},
        jobs=[("warm", "pending", 5), ("warm", "done", 40)],
        warm_run={"total": 45, "settled": 40}, deadline_lag={"refresh": 1.5})
    base.update(changes)
    return Figures(**base)  # type: ignore[arg-type]


def samples(found: Figures) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the exposition, parsed back by Prometheus's own parser."""
    text = exposition(families(found)).decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_requests_are_counted_by_outcome_reason_and_source() -> None:
    found = samples(figures())
    def requests(outcome: str, reason: str = "", source: str = "visitor") -> float:
        return found["stoker_requests_total", (("outcome", outcome), ("reason", reason),
                                               ("source", source))]
    assert requests("hit") == 7
    assert requests("miss") == 2  # the warmer's misses are apart
    assert requests("miss", source="warmer") == 5
    assert requests("bypass", "bypass") == 3  # a bypass is no miss
    assert requests("pass", "no-store") == 1
    assert found["stoker_cookie_bypasses_total", (("cookie", "session"),)] == 3


def test_the_origin_histogram_is_cumulative_and_ends_with_every_answer() -> None:
    found = samples(figures())
    bucket = {labels[0][1]: value for (name, labels), value in found.items()
              if name == "stoker_origin_response_seconds_bucket"}
    assert bucket["0.005"] == 1 and bucket["0.025"] == 3 and bucket["5.0"] == 4
    assert bucket["+Inf"] == 5 == found["stoker_origin_response_seconds_count", ()]
    assert found["stoker_origin_response_seconds_sum", ()] == 63.044
    assert found["stoker_origin_failures_total", ()] == 1
    assert found["stoker_origin_up", ()] == 1


def test_cache_queue_and_warm_figures() -> None:
    found = samples(figures())
    assert found["stoker_cache_entries", (("tier", "l1"),)] == 4
    assert found["stoker_cache_bytes", (("tier", "l2"),)] == 9000
    assert found["stoker_l1_evictions_total", ()] == 1
    assert found["stoker_l2_queued_writes", ()] == 3
    assert found["stoker_purge_marks_applying", (("tier", "l1"),)] == 1
    assert found["stoker_jobs", (("queue", "warm"), ("state", "pending"))] == 5
    assert found["stoker_warm_run_urls", (("state", "settled"),)] == 40
    assert found["stoker_deadline_lag_seconds", (("deadline", "refresh"),)] == 1.5


def test_a_figure_not_read_is_left_out_not_zero() -> None:
    found = samples(figures(l2=None, warm_run=None, jobs=[]))
    assert ("stoker_cache_entries", (("tier", "l2"),)) not in found
    assert ("stoker_cache_entries", (("tier", "l1"),)) in found
    assert not any(name == "stoker_jobs" for name, _ in found)


@given(st.lists(st.floats(min_value=0, max_value=100, allow_nan=False)))
def test_timing_buckets_are_cumulative_counts_of_answers(times: list[float]) -> None:
    timing = OriginTiming()
    for seconds in times:
        timing.answered(seconds)
    rows = timing.cumulative()
    assert [bound for bound, _ in rows] == [*BUCKETS, float("inf")]
    counts = [count for _, count in rows]
    assert counts == sorted(counts) and counts[-1] == len(times) == timing.answers
    for bound, count in rows:
        assert count == sum(1 for seconds in times if seconds <= bound)


def test_one_scrape_counts_every_process_as_they_last_said() -> None:
    mine = figures()
    theirs = json.loads(said(figures(in_flight=5, origin_up=False)))
    total = combined(mine, [theirs])
    assert total.outcomes[("hit", "", False)] == 14
    assert total.cookie_bypasses == {"session": 6}
    assert total.timing.answers == 10 and total.timing.failures == 2
    assert total.timing.seconds == 2 * mine.timing.seconds
    assert total.in_flight == 7 and total.origin_up is False
    assert total.l1["entries"] == 8 and total.l2 == mine.l2  # the shared tier read once
    assert total.jobs == mine.jobs


def test_only_live_others_figures_are_counted() -> None:
    members = [Member("n/0", 1, 100.0, said(figures())), Member("n/1", 1, 100.0, said(figures())),
               Member("n/2", 1, 50.0, said(figures())), Member("n/3", 1, 100.0, None)]
    assert [name for name, _ in named_others_said(members, "n/0", 105.0, 10.0)] == ["n/1"]


def test_a_process_tells_its_requests_and_what_it_did_not_cache() -> None:
    snapshot = {"total": 1, "reasons": [{"reason": "private", "count": 1, "details": {},
                                         "urls": [["https://h/", 1, 0]],
                                         "sections": [["https://h/", 1, 0, 1]]}]}
    theirs = json.loads(said(figures(requests=12, not_cached=snapshot)))
    assert (theirs["requests"], theirs["not_cached"]) == (12, snapshot)


def test_notifier_reconnects_are_summed_and_connected_only_if_every_process_is() -> None:
    theirs = json.loads(said(figures(notifier_reconnects=2, notifier_connected=False)))
    total = combined(figures(notifier_reconnects=1), [theirs])
    assert total.notifier_reconnects == 3 and total.notifier_connected is False
    found = samples(total)
    assert found["stoker_notifier_reconnects_total", ()] == 3
    assert found["stoker_notifier_connected", ()] == 0
    assert samples(figures())["stoker_notifier_connected", ()] == 1


def test_a_heartbeat_says_release_cache_version_workers_hit_ratio_and_l1() -> None:
    node = {"release": "9.9.9", "cache_version": "4", "warm_workers": 2}
    summary = member_summary(said(figures(node=node)))
    # 7 hits of 13 requests by visitors (the warmer's 5 misses are not theirs)
    assert summary == {**node, "requests": 13, "hit_ratio": round(7 / 13, 4),
                       "l1_entries": 4, "l1_bytes": 4096}


def test_a_member_that_said_nothing_or_is_older_shows_what_it_did_say() -> None:
    nothing = member_summary(None)
    assert set(nothing.values()) == {None}
    older = json.loads(said(figures()))
    del older["node"], older["l2_dropped"]
    summary = member_summary(json.dumps(older))
    assert summary["release"] is None and summary["l1_entries"] == 4
    assert combined(figures(), [older]).l2_dropped == 0  # a key it lacks counts 0


def test_a_member_belongs_to_the_node_before_its_process_index() -> None:
    assert node_of("web-1/0") == node_of("web-1/12") == "web-1"
    assert node_of("web-1") == "web-1"  # a node of one process
    assert node_of("a/b") == "a/b"  # not an index: the whole name


def requests_of(found: Figures) -> int:
    return sum(found.outcomes.values())


def member(name: str, seen_at: float, run: str, **changes: object) -> Member:
    told = json.loads(said(figures(**changes)))
    return Member(name, 1, seen_at, json.dumps({**told, "run": run}))


def test_a_scrape_counts_the_processes_of_its_node_only() -> None:
    members = [member("a/0", 100.0, "x"), member("a/1", 100.0, "y"),
               member("b/0", 100.0, "z"), member("b/1", 100.0, "w")]
    state, total = tally(Tally(), figures(), members, "a/0", 100.0, 10.0)
    assert requests_of(total) == 2 * requests_of(figures())  # a/0 itself and a/1
    assert (total.node_name, total.processes) == ("a", 2)
    assert set(state.last) == {"a/1"}


def test_a_node_counter_never_falls_when_a_process_leaves_or_restarts() -> None:
    mine, one = figures(), requests_of(figures())
    state, first = tally(Tally(), mine, [member("a/1", 100.0, "r1")], "a/0", 100.0, 10.0)
    state, left = tally(state, mine, [], "a/0", 101.0, 10.0)  # a/1 left the bus
    assert requests_of(first) == requests_of(left) == 2 * one
    assert left.processes == 1 and left.in_flight == mine.in_flight  # gauges: the live
    fresh = member("a/1", 102.0, "r2", outcomes={("hit", "", False): 1})  # started again
    state, back = tally(state, mine, [fresh], "a/0", 102.0, 10.0)
    assert requests_of(back) == 2 * one + 1
    state, stale = tally(state, mine, [member("a/1", 102.0, "r2", outcomes={
        ("hit", "", False): 3})], "a/0", 200.0, 10.0)  # not heard of for long: still counted
    assert requests_of(stale) == 2 * one + 3 and stale.processes == 1
    _, again = tally(state, mine, [member("a/1", 201.0, "r3")], "a/0", 201.0, 10.0)
    assert requests_of(again) == 3 * one + 3
    assert again.timing.failures == 4 * mine.timing.failures  # mine, r1, r2, r3


def test_warmed_entries_and_their_visitor_reads_are_summed_over_the_processes() -> None:
    theirs = json.loads(said(figures(warm_stored=30, warm_read=12)))
    older = {key: value for key, value in theirs.items()
             if key not in ("warm_stored", "warm_read")}  # a release before the figure
    total = combined(figures(warm_stored=10, warm_read=1), [theirs, older])
    assert (total.warm_stored, total.warm_read) == (40, 13)
    found = samples(total)
    assert found["stoker_warm_stored_entries_total", ()] == 40
    assert found["stoker_warm_entries_read_total", ()] == 13


def test_refreshes_are_counted_by_result_and_summed_over_processes() -> None:
    mine = figures(refreshed=3, refresh_not_modified=10, refresh_failed=1)
    found = samples(mine)
    assert found["stoker_refreshes_total", (("result", "refreshed"),)] == 3
    assert found["stoker_refreshes_total", (("result", "not_modified"),)] == 10
    assert found["stoker_refreshes_total", (("result", "failed"),)] == 1
    total = combined(mine, [json.loads(said(mine)), {**json.loads(said(figures())),
                                                     "refreshed": 2}])
    assert (total.refreshed, total.refresh_not_modified, total.refresh_failed) == (8, 20, 2)

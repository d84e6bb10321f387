"""The warm run state machine: tables for each transition, hypothesis for the invariants."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stoker.warm import run as machine
from stoker.warm.run import (
    COLLECT_STALL,
    DETAILED_STATES,
    RESULTS,
    Counts,
    Result,
    RevisitPolicy,
    Run,
    UrlState,
    Visit,
)

NOW = 1_000.0


def warming(*urls: str, reason: machine.Reason = "purge") -> tuple[Run, dict[str, UrlState]]:
    """A targeted run warming ``urls``, with their states."""
    added = machine.add_urls(machine.new_run(1, reason, "urls", NOW), {}, urls, NOW,
                             reopen=False)
    return added.run, added.changes


def visit(run: Run, states: dict[str, UrlState], url: str, result: Result,
          now: float = NOW, policy: RevisitPolicy = machine.DEFAULT_POLICY,
          detail: str | None = None) -> machine.Recorded:
    """Record ``result`` for the URL's current visit and keep ``states`` in step."""
    recorded = machine.record(run, url, states.get(url), states[url].visit, result, now, policy,
                              detail=detail)
    if recorded.url is not None:
        states[url] = recorded.url
    return recorded


# --- creating and planning ------------------------------------------------------------

@pytest.mark.parametrize(("scope", "phase"), [("site", "collect"), ("urls", "warm")])
def test_new_run_starts_collecting_a_site_and_warming_a_url_list(
        scope: machine.Scope, phase: machine.Phase) -> None:
    run = machine.new_run(7, "manual", scope, NOW)
    assert (run.id, run.phase, run.started_at, run.counts) == (7, phase, NOW, Counts())


def test_new_run_rejects_an_unknown_reason_by_name() -> None:
    with pytest.raises(ValueError, match=r"'whim'.*manual, purge, edit, deploy, daily"):
        machine.new_run(1, "whim", "site", NOW)  # type: ignore[arg-type]


_SITE = machine.new_run(1, "manual", "site", NOW)
_URLS = machine.new_run(1, "purge", "urls", NOW)
_DONE = dataclasses.replace(_SITE, phase="done")


@pytest.mark.parametrize(("active", "scope", "replace", "plan"), [
    (None, "site", False, "start"),
    (None, "urls", False, "start"),
    (_DONE, "site", False, "start"),
    (_SITE, "urls", False, "merge"),
    (_URLS, "urls", True, "merge"),
    (_SITE, "site", False, "busy"),
    (_SITE, "site", True, "supersede"),
    (_URLS, "site", False, "supersede"),
])
def test_plan_create(active: Run | None, scope: machine.Scope, replace: bool,
                     plan: machine.Plan) -> None:
    assert machine.plan_create(active, scope, replace=replace) == plan


def test_supersede_cancels_the_running_run_naming_the_new_one() -> None:
    old = machine.supersede(_SITE, dataclasses.replace(_SITE, id=2), NOW + 5)
    assert (old.phase, old.finished_at, old.error) == ("cancelled", NOW + 5, "superseded by run 2")


# --- collect --------------------------------------------------------------------------

@pytest.mark.parametrize(("owner", "claimed_at", "now", "claimer", "wins"), [
    (None, None, NOW, "w2", True),
    ("w1", NOW, NOW + 10, "w1", True),
    ("w1", NOW, NOW + 10, "w2", False),
    ("w1", NOW, NOW + COLLECT_STALL, "w2", False),
    ("w1", NOW, NOW + COLLECT_STALL + 1, "w2", True),
])
def test_claim_collect(owner: str | None, claimed_at: float | None, now: float, claimer: str,
                       wins: bool) -> None:
    run = dataclasses.replace(_SITE, collect_owner=owner, collect_claimed_at=claimed_at)
    claimed = machine.claim_collect(run, claimer, now)
    assert (claimed is not None) == wins
    if claimed is not None:
        assert (claimed.collect_owner, claimed.collect_claimed_at) == (claimer, now)


def test_only_a_collecting_run_can_be_claimed() -> None:
    assert machine.claim_collect(_URLS, "w1", NOW) is None
    assert machine.claim_collect(_DONE, "w1", NOW) is None


def test_a_failed_collect_keeps_the_run_collecting_and_frees_its_claim() -> None:
    run = machine.claim_collect(_SITE, "w1", NOW)
    assert run is not None
    assert machine.collect_failed(run, "w2", "down") is None  # not w2's claim
    assert machine.collect_failed(_DONE, "w1", "down") is None
    waiting = machine.collect_failed(run, "w1", "discovery failed (try 1)")
    assert waiting is not None and waiting.active
    assert (waiting.phase, waiting.error, waiting.collect_owner, waiting.collect_claimed_at
            ) == ("collect", "discovery failed (try 1)", None, None)
    retried = machine.claim_collect(waiting, "w2", NOW + 30)  # any worker may retry it
    assert retried is not None
    added = machine.collected(retried, "w2", {}, ["u"], 0, NOW + 31)
    assert added is not None and (added.run.phase, added.run.error) == ("warm", None)


def test_collected_needs_the_claim_and_starts_warming_the_new_urls() -> None:
    run = machine.claim_collect(_SITE, "w1", NOW)
    assert run is not None
    assert machine.collected(run, "w2", {}, ["/a"], 0, NOW) is None
    merged = {"/m": UrlState("warmed", 1)}
    run = dataclasses.replace(run, counts=Counts(total=1, warmed=1))
    added = machine.collected(run, "w1", merged, ["/a", "/m", "/a", "/b"], 3, NOW)
    assert added is not None
    assert added.run.phase == "warm"
    assert added.run.counts == Counts(total=3, warmed=1, skipped=3)
    assert added.visits == [Visit("/a", 0), Visit("/b", 0)]


def test_collecting_nothing_is_done_at_once() -> None:
    run = machine.claim_collect(_SITE, "w1", NOW)
    assert run is not None
    added = machine.collected(run, "w1", {}, [], 0, NOW + 1)
    assert added is not None
    assert (added.run.phase, added.run.finished_at) == ("done", NOW + 1)


# --- recording ------------------------------------------------------------------------

@pytest.mark.parametrize(("result", "state", "count"), [
    ("warmed", "warmed", "warmed"),
    ("not_modified", "not_modified", "not_modified"),
    ("not_stored", "not_stored", "not_stored"),
    ("failed", "failed", "failed"),
    ("stopgap", "stopgap", "stopgap_pending"),
])
def test_a_first_visit_is_counted_in_its_result(result: Result, state: str, count: str) -> None:
    run, states = warming("/a", "/b")
    recorded = visit(run, states, "/a", result, NOW + 1)
    assert recorded.counted
    assert recorded.url == UrlState(state, 1)  # type: ignore[arg-type]
    assert getattr(recorded.run.counts, count) == 1
    assert recorded.run.phase == "warm"


def test_a_page_not_stored_is_settled_with_its_reason_and_never_revisited() -> None:
    run, states = warming("/a", "/b")
    recorded = visit(run, states, "/a", "not_stored", detail="set-cookie")
    assert (recorded.url, recorded.revisit) == (UrlState("not_stored", 1, detail="set-cookie"),
                                                None)
    assert recorded.run.counts == Counts(total=2, not_stored=1)
    assert recorded.run.counts.settled == 1
    last = visit(recorded.run, states, "/b", "warmed", NOW + 1)
    assert last.run.counts == Counts(total=2, warmed=1, not_stored=1)
    assert (last.run.phase, last.run.finished_at) == ("done", NOW + 1)


@pytest.mark.parametrize(("result", "kept"), [
    ("not_stored", "private"), ("failed", "private"), ("warmed", None),
    ("not_modified", None), ("stopgap", None),
])
def test_only_a_url_not_stored_or_failed_keeps_its_detail(result: Result,
                                                          kept: str | None) -> None:
    run, states = warming("/a")
    url = visit(run, states, "/a", result, detail="private").url
    assert url is not None and (url.state, url.detail) == (result, kept)


def test_queueing_a_url_again_clears_its_detail() -> None:
    run, states = warming("/a", "/b")
    run = visit(run, states, "/a", "failed", detail="status 500").run
    added = machine.merge(run, states, ["/a"], NOW)
    assert added.changes == {"/a": UrlState("queued", 1)}


def test_a_stopgap_is_revisited_after_the_delay_and_then_counted_rewarmed() -> None:
    run, states = warming("/a")
    first = visit(run, states, "/a", "stopgap", NOW)
    assert (first.revisit, first.revisit_at) == (Visit("/a", 1), NOW + 20)
    again = visit(first.run, states, "/a", "warmed", NOW + 20)
    assert again.revisit is None
    assert again.run.counts == Counts(total=1, rewarmed=1)
    assert (again.run.phase, again.run.finished_at) == ("done", NOW + 20)


@pytest.mark.parametrize(("answers", "final"), [
    (["stopgap", "not_modified"], "rewarmed"),
    (["stopgap", "failed"], "failed"),
    (["stopgap", "not_stored"], "not_stored"),
    (["stopgap", "stopgap", "warmed"], "rewarmed"),
    (["stopgap", "stopgap", "stopgap"], "gave_up"),
])
def test_a_stopgap_gets_at_most_two_revisits(answers: list[Result], final: str) -> None:
    run, states = warming("/a")
    for answer in answers:
        run = visit(run, states, "/a", answer).run
    assert states["/a"].state == final
    assert run.counts.total == 1 and run.counts.stopgap_pending == 0
    assert run.phase == "done"


def test_no_revisits_when_the_run_already_has_the_most_pending() -> None:
    policy = RevisitPolicy(max_pending=2)
    run, states = warming("/a", "/b", "/c")
    for url in ("/a", "/b", "/c"):
        run = visit(run, states, url, "stopgap", policy=policy).run
    assert [states[u].state for u in ("/a", "/b", "/c")] == ["stopgap", "stopgap", "gave_up"]
    assert (run.counts.stopgap_pending, run.counts.gave_up) == (2, 1)


def test_a_visit_delivered_twice_counts_once_and_a_stale_one_never() -> None:
    run, states = warming("/a", "/b")
    first = machine.record(run, "/a", states["/a"], 0, "failed", NOW)
    again = machine.record(first.run, "/a", first.url, 0, "warmed", NOW)
    assert not again.counted and again.run == first.run
    ahead = machine.record(run, "/a", states["/a"], 1, "warmed", NOW)
    assert not ahead.counted and ahead.run == run
    assert not machine.record(run, "/x", None, 0, "warmed", NOW).counted


def test_record_rejects_an_unknown_result_by_name() -> None:
    run, states = warming("/a")
    with pytest.raises(ValueError, match="'great'"):
        machine.record(run, "/a", states["/a"], 0, "great", NOW)  # type: ignore[arg-type]


# --- merging --------------------------------------------------------------------------

def test_merge_gives_every_url_a_visit_now() -> None:
    run, states = warming("/a", "/b", "/c", "/d")
    run = visit(run, states, "/a", "warmed").run
    run = visit(run, states, "/b", "stopgap").run
    added = machine.merge(run, states, ["/a", "/b", "/c", "/e"], NOW)
    # settled /a queued again; the stopgap /b and the queued /c get a new visit number
    # (their pending visits no longer count); /e is new; /d, not merged, waits its turn
    assert added.visits == [Visit("/a", 1), Visit("/b", 2), Visit("/c", 1), Visit("/e", 0)]
    assert added.changes == {"/a": UrlState("queued", 1), "/b": UrlState("queued", 2),
                             "/c": UrlState("queued", 1), "/e": UrlState()}
    assert added.run.counts == Counts(total=5)
    states.update(added.changes)
    stale = machine.record(added.run, "/c", states["/c"], 0, "warmed", NOW)
    assert not stale.counted  # the visit /c waited for before the merge


def test_a_done_run_takes_no_more_urls() -> None:
    run, states = warming("/a")
    done = visit(run, states, "/a", "warmed").run
    assert machine.merge(done, states, ["/b"], NOW) == machine.Added(done, {}, [])


# --- ending ---------------------------------------------------------------------------

def test_finish_done_needs_every_url_settled() -> None:
    run, _ = warming("/a")
    with pytest.raises(ValueError, match="1 URL still open"):
        machine.finish(run, "done", NOW)
    with pytest.raises(ValueError, match="'cancelled'"):
        machine.finish(run, "cancelled", NOW)


def test_finish_failed_and_cancel_end_an_active_run_once() -> None:
    failed = machine.finish(_SITE, "failed", NOW, "sitemap too large")
    assert failed is not None
    assert (failed.phase, failed.error, failed.finished_at) == ("failed", "sitemap too large", NOW)
    assert machine.finish(failed, "failed", NOW + 1) is None
    assert machine.cancel(failed, NOW + 1) is None
    cancelled = machine.cancel(_URLS, NOW)
    assert cancelled is not None and cancelled.phase == "cancelled"


# --- invariants (hypothesis) ----------------------------------------------------------

URLS = [f"/p{n}" for n in range(6)]
_op = st.one_of(
    st.tuples(st.just("record"), st.sampled_from(URLS), st.integers(-1, 1),
              st.sampled_from(RESULTS), st.none() | st.sampled_from(["set-cookie", "status 502"])),
    st.tuples(st.just("merge"), st.lists(st.sampled_from(URLS), max_size=4)),
    st.tuples(st.just("collect"), st.lists(st.sampled_from(URLS), max_size=6)),
    st.tuples(st.just("fail"),),
    st.tuples(st.just("cancel"),),
)


def check_tally(run: Run, states: dict[str, UrlState]) -> None:
    """The counts are exactly the tally of the URL states."""
    tally = Counter(s.state for s in states.values())
    c = run.counts
    assert c.total == len(states)
    assert (c.warmed, c.not_modified, c.not_stored, c.failed, c.rewarmed, c.gave_up,
            c.stopgap_pending) == (
        tally["warmed"], tally["not_modified"], tally["not_stored"], tally["failed"],
        tally["rewarmed"], tally["gave_up"], tally["stopgap"])
    assert c.settled == sum(tally[s] for s in machine.URL_STATES if s not in machine.OPEN_STATES)
    assert all(0 <= getattr(c, f.name) <= c.total
               for f in dataclasses.fields(c) if f.name != "skipped")
    assert all(s.detail is None for s in states.values() if s.state not in DETAILED_STATES)


def apply(run: Run, states: dict[str, UrlState], op: tuple[object, ...],
          policy: RevisitPolicy) -> Run:
    kind = op[0]
    if kind == "record":
        url, offset, result, detail = op[1], op[2], op[3], op[4]
        assert isinstance(url, str) and isinstance(offset, int)
        assert detail is None or isinstance(detail, str)
        state = states.get(url)
        number = (state.visit if state else 0) + offset
        recorded = machine.record(run, url, state, number, result, NOW, policy,  # type: ignore[arg-type]
                                  detail=detail)
        if recorded.counted and recorded.url is not None \
                and recorded.url.state in DETAILED_STATES:
            assert recorded.url.detail == detail
        assert recorded.counted == (recorded.run != run or recorded.url != state)
        if recorded.counted and recorded.url is not None:
            states[url] = recorded.url
        return recorded.run
    if kind in ("merge", "collect"):
        urls = op[1]
        assert isinstance(urls, list)
        claimed = machine.claim_collect(run, "w", NOW) or run
        added = (machine.merge(run, states, urls, NOW) if kind == "merge"
                 else machine.collected(claimed, "w", states, urls, 0, NOW))
        if added is None:
            return run
        states.update(added.changes)
        return added.run
    ended = machine.finish(run, "failed", NOW) if kind == "fail" else machine.cancel(run, NOW)
    return ended or run


@settings(max_examples=300, deadline=None)
@given(scope=st.sampled_from(["site", "urls"]), first=st.lists(st.sampled_from(URLS), min_size=1),
       ops=st.lists(_op, max_size=40), rounds=st.integers(0, 3), room=st.integers(0, 3))
def test_invariants_hold_whatever_happens(scope: machine.Scope, first: list[str],
                                          ops: list[tuple[object, ...]], rounds: int,
                                          room: int) -> None:
    policy = RevisitPolicy(delay=20, max_rounds=rounds, max_pending=room)
    run = machine.new_run(1, "manual", scope, NOW)
    states: dict[str, UrlState] = {}
    if scope == "urls":
        added = machine.add_urls(run, {}, first, NOW, reopen=False)
        run, states = added.run, dict(added.changes)
    for op in ops:
        before = run
        run = apply(run, states, op, policy)
        check_tally(run, states)
        assert run.counts.stopgap_pending <= room
        assert all(state.revisits <= rounds for state in states.values())
        if not before.active:
            assert run == before, "a finished run never changes"
        if run.phase not in ("failed", "cancelled"):
            assert (run.phase == "done") == machine.all_settled(run)


@given(st.lists(st.tuples(st.none() | st.sampled_from(machine.URL_STATES),
                          st.integers(0, 5)), max_size=8),
       st.sampled_from(machine.URL_STATES))
def test_many_urls_moved_at_once_count_as_each_moved_in_turn(
        moves: list[tuple[machine.UrlStateName | None, int]],
        new: machine.UrlStateName) -> None:
    start = machine.Counts(total=50, warmed=10, not_modified=10, not_stored=5, failed=5)
    one_by_one = start
    olds: Counter[machine.UrlStateName | None] = Counter()
    for old, count in moves:
        olds[old] += count
        for _ in range(count):
            one_by_one = one_by_one.moved(old, new)
    assert start.moved_many(olds, new) == one_by_one

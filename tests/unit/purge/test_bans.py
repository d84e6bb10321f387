"""The bans (the purge marks in force for L2 reads, judged by store time): the rule, its
agreement with :func:`judge` on entries stored before the marks, and the bound."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st
from tests.entries import make_entry

from stoker.clock import FakeClock
from stoker.purge.bans import PurgeBans, screened
from stoker.purge.list import PurgeList, PurgeMark, Verdict, judge

ENTRY = make_entry("https://example.com/blog/1", tags=("post-1", "posts"), now=100.0)


def mark(now: float, *, soft: bool = False, **scope: object) -> PurgeMark:
    fields: dict[str, object] = {"keys": frozenset(), "prefixes": (), "tags": frozenset(),
                                 "everything": False, **scope}
    return PurgeMark(1, 0.0, now, soft, **fields)  # type: ignore[arg-type]


def test_no_mark_judges_nothing() -> None:
    bans = PurgeBans()
    assert not bans and bans.verdict(ENTRY) is None


def test_a_mark_judges_what_was_stored_at_or_before_it_and_nothing_stored_after() -> None:
    bans = PurgeBans()
    bans.add(mark(150.0, tags=frozenset({"post-1"})))
    assert bans.verdict(ENTRY) == Verdict(hard=True, stale_from=150.0)
    assert bans.verdict(replace(ENTRY, stored_at=150.0)) == Verdict(True, 150.0)
    assert bans.verdict(replace(ENTRY, stored_at=150.5)) is None  # fetched after the purge
    assert bans.verdict(make_entry("https://example.com/other", now=100.0)) is None


def test_every_scope_kind_is_judged() -> None:
    for scope in ({"keys": frozenset({ENTRY.primary_key})},
                  {"prefixes": ("https://example.com/blog/",)},
                  {"tags": frozenset({"posts"})}, {"everything": True}):
        bans = PurgeBans()
        bans.add(mark(150.0, soft=True, **scope))
        assert bans.verdict(ENTRY) == Verdict(hard=False, stale_from=150.0), scope


def test_hard_wins_and_soft_gives_the_earliest_time_after_the_store() -> None:
    bans = PurgeBans()
    bans.add(mark(120.0, soft=True, tags=frozenset({"posts"})))
    bans.add(mark(130.0, soft=True, keys=frozenset({ENTRY.primary_key})))
    bans.add(mark(90.0, soft=False, tags=frozenset({"post-1"})))  # before the store
    assert bans.verdict(ENTRY) == Verdict(hard=False, stale_from=120.0)
    bans.add(mark(140.0, soft=False, prefixes=("https://example.com/",)))
    assert bans.verdict(ENTRY) == Verdict(hard=True, stale_from=140.0)


SCOPES = st.fixed_dictionaries({
    "keys": st.frozensets(st.sampled_from([ENTRY.primary_key, "v1|GET|x"]), max_size=2),
    "prefixes": st.lists(st.sampled_from(["https://example.com/", "https://x/"]),
                         max_size=2, unique=True).map(tuple),
    "tags": st.frozensets(st.sampled_from(["post-1", "posts", "other"]), max_size=2),
    "everything": st.booleans(),
})


@given(st.lists(st.tuples(st.floats(101, 1000), st.booleans(), SCOPES), max_size=8))
def test_on_an_entry_stored_before_every_mark_the_bans_agree_with_judge(
        marks: list[tuple[float, bool, dict[str, object]]]) -> None:
    """Kept by item (latest times), the verdict is judge's, up to the soft time: judge
    gives the earliest soft purge, the bans the earliest of each item's latest; both are
    after the store, so the copy is stale either way."""
    bans = PurgeBans()
    made = [mark(now, soft=soft, **scope) for now, soft, scope in marks]
    for each in made:
        bans.add(each)
    expected, got = judge(made, -1, ENTRY), bans.verdict(ENTRY)
    assert (expected is None) == (got is None)
    if expected is not None and got is not None:
        assert expected.hard == got.hard
        assert got.stale_from >= ENTRY.stored_at


def test_past_the_bound_the_older_half_folds_into_the_floor_which_only_widens() -> None:
    bans = PurgeBans(most_items=4, most_prefixes=2)
    for at in range(1, 6):
        bans.add(mark(100.0 + at, soft=at != 2, tags=frozenset({f"t{at}"})))
    assert len(bans) <= 4
    old = make_entry("https://example.com/z", now=101.5)  # no tag: only the floor judges
    assert bans.verdict(old) == Verdict(hard=True, stale_from=102.0)  # a hard one folded
    assert bans.verdict(make_entry("https://example.com/z", now=103.5)) is None
    tagged = make_entry("https://example.com/z", now=104.5, tags=("t5",))
    assert bans.verdict(tagged) == Verdict(hard=False, stale_from=105.0)  # still kept
    for at in range(3):
        bans.add(mark(200.0 + at, prefixes=(f"https://example.com/{at}/",)))
    assert len(bans) <= 4 + 2


def test_folding_keeps_many_marks_bounded() -> None:
    bans = PurgeBans(most_items=1000, most_prefixes=10)
    for at in range(20_000):
        bans.add(mark(float(at), keys=frozenset({f"k{at}"}), prefixes=(f"/p{at % 50}/",)))
    assert len(bans) <= 1000 + 10


def test_the_purge_list_keeps_every_mark_it_records_in_the_bans_past_its_window() -> None:
    clock = FakeClock()
    purges = PurgeList(clock, window=1.0)
    purges.record(soft=False, now=150.0, tags=["post-1"])
    clock.advance(10.0)
    purges.record(soft=True, now=160.0, tags=["other"])  # trims the first from the log
    assert len(purges) == 1
    assert purges.screen_l2([ENTRY], []) == []
    assert purges.screen_l2([replace(ENTRY, stored_at=155.0)], []) == [
        replace(ENTRY, stored_at=155.0)]


def test_screen_l2_takes_the_worse_of_the_unapplied_marks_and_the_bans() -> None:
    purges = PurgeList(FakeClock())
    purges.record(soft=True, now=150.0, tags=["posts"])
    late = replace(ENTRY, stored_at=200.0)  # after the ban: only an unapplied mark judges
    unapplied = [mark(140.0, tags=frozenset({"post-1"}))]
    assert purges.screen_l2([late], unapplied) == []
    [soft] = purges.screen_l2([ENTRY], [])
    assert soft.fresh_until == 150.0
    assert purges.screen_l2([ENTRY], unapplied) == []


def test_screened_carries_out_verdicts() -> None:
    other = make_entry("https://example.com/2")
    [kept, soft] = screened([ENTRY, other, other], [None, Verdict(True, 1.0),
                                                     Verdict(False, 101.0)])
    assert kept is ENTRY and soft.fresh_until == 101.0

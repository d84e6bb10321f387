"""The outbox of purges not relayed yet: bounded, ordered, and never weaker than the
purges it stands for (property tests over random purge sequences)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.entries import make_entry

from stoker.cache.entry import CacheEntry
from stoker.purge.list import PurgeMark, Verdict, judge
from stoker.purge.outbox import Outgoing, folded, kept

URLS = ("https://s.test/a", "https://s.test/a/b", "https://s.test/c", "https://s.test/d/e")
TAGS = ("t1", "t2", "t3")


def entry(url: str, tags: frozenset[str]) -> CacheEntry:
    return make_entry(url, tags=tags)


@st.composite
def marks(draw: st.DrawFn) -> tuple[PurgeMark, str | None]:
    """A purge as the relay takes it: a mark, and a version for a hard purge of all."""
    soft = draw(st.booleans())
    everything = draw(st.integers(0, 9)) == 0
    mark = PurgeMark(seq=0, at=0.0, now=draw(st.floats(1e9, 2e9)), soft=soft,
                     keys=frozenset(entry(url, frozenset()).primary_key
                                    for url in draw(st.sets(st.sampled_from(URLS)))),
                     prefixes=tuple(draw(st.lists(st.sampled_from(
                         ("https://s.test/a", "https://s.test/d/")), max_size=2))),
                     tags=frozenset(draw(st.sets(st.sampled_from(TAGS)))),
                     everything=everything)
    return mark, ("v" if everything and not soft else None)


def taken(purges: list[tuple[PurgeMark, str | None]], most: int) -> tuple[Outgoing, ...]:
    outbox: tuple[Outgoing, ...] = ()
    for ticket, (mark, version) in enumerate(purges, 1):
        outbox = kept(outbox, Outgoing(mark, version, ticket), most)
    return outbox


def at_least_as_strong(folded_verdict: Verdict | None, verdict: Verdict | None) -> bool:
    if verdict is None:
        return folded_verdict is None
    if verdict.hard:
        return folded_verdict is not None and folded_verdict.hard
    return folded_verdict is not None and (
        folded_verdict.hard or folded_verdict.stale_from <= verdict.stale_from)


@settings(max_examples=300)
@given(st.lists(marks(), max_size=12), st.integers(1, 5),
       st.sampled_from(URLS), st.sets(st.sampled_from(TAGS)))
def test_the_outbox_is_bounded_ordered_and_covers_what_it_stands_for(
        purges: list[tuple[PurgeMark, str | None]], most: int, url: str,
        tags: set[str]) -> None:
    outbox = taken(purges, most)
    assert len(outbox) <= max(most, 3)
    uptos = [one.upto for one in outbox if one.upto]
    assert uptos == sorted(uptos)
    if purges:
        assert outbox[-1].upto == len(purges)  # once the last is on the bus, all are
    last_all = max((i for i, (_, version) in enumerate(purges) if version), default=None)
    since = purges if last_all is None else purges[last_all + 1:]
    if last_all is not None:
        assert outbox[0].version == "v" and outbox[0].mark == purges[last_all][0]
    rest = [one.mark for one in outbox if one.version is None]
    cached = entry(url, frozenset(tags))
    assert at_least_as_strong(judge(rest, 0, cached), judge([m for m, _ in since], 0, cached))


def test_folding_keeps_soft_apart_from_hard_at_the_earliest_time() -> None:
    soft = [PurgeMark(0, 0.0, now, True, tags=frozenset({tag}))
            for now, tag in ((20.0, "a"), (10.0, "b"))]
    hard = PurgeMark(0, 0.0, 30.0, False, prefixes=("https://s.test/a",))
    out = folded([Outgoing(soft[0], None, 1), Outgoing(hard, None, 2),
                  Outgoing(soft[1], None, 3)])
    assert [(one.mark.soft, one.mark.now, one.upto) for one in out] == [
        (True, 10.0, 0), (False, 30.0, 3)]
    assert out[0].mark.tags == {"a", "b"} and out[1].mark.prefixes == ("https://s.test/a",)


def test_a_hard_purge_of_everything_replaces_what_was_kept() -> None:
    everything = PurgeMark(0, 0.0, 5.0, False, everything=True)
    before = (Outgoing(PurgeMark(0, 0.0, 1.0, True, tags=frozenset({"a"})), None, 1),)
    assert kept(before, Outgoing(everything, "v2", 2)) == (Outgoing(everything, "v2", 2),)

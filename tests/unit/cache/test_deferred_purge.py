"""MemoryStore's deferred purges: in force at once for every operation, applied lazily.

The property test runs the same operations on two stores, one purging at once
(``purge_nowait``) and one deferring (``defer_purge_nowait``, settled a few entries
at a time, at random moments); every read must see the same entries in both.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.entries import make_entry

from stoker.cache.entry import CacheEntry
from stoker.cache.memory import MemoryStore
from stoker.cache.store import EntryRef, as_refs
from stoker.clock import FakeClock

NAMES = "abc"
TAGS = ("t0", "t1")


def url(name: str) -> str:
    return f"https://example.com/{name}"


def key(name: str) -> str:
    return make_entry(url(name)).primary_key


def seen(entries: list[CacheEntry] | None) -> list[tuple[str, str, float, int]]:
    return [(e.primary_key, e.variant, e.fresh_until, e.status) for e in entries or []]


def tagged(store: MemoryStore, name: str, *, version: int, clock: FakeClock,
           variant: str = "", tags: tuple[str, ...] = ("t0",)) -> CacheEntry:
    entry = make_entry(url(name), variant=variant, now=clock.now(), tags=tags,
                       status=200 + version)
    store.put_nowait(entry)
    return entry


OPERATIONS = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from(NAMES), st.sampled_from(["", "gz"]),
              st.sets(st.sampled_from(TAGS), min_size=1)),
    st.tuples(st.just("purge"), st.sampled_from(TAGS), st.booleans()),
    st.tuples(st.just("settle"), st.integers(0, 3)),
    st.tuples(st.just("tick"), st.integers(1, 90)),
    st.tuples(st.just("delete"), st.sampled_from(NAMES)),
    st.tuples(st.just("get"), st.sampled_from(NAMES)),
    st.tuples(st.just("list"), st.sampled_from(TAGS)),
), max_size=50)


@settings(max_examples=500)
@given(OPERATIONS)
@example([("put", "a", "", {"t0"}), ("purge", "t0", False), ("put", "a", "", {"t0"})])
@example([("put", "a", "", {"t0"}), ("purge", "t0", True), ("list", "t0"),
          ("purge", "t0", False), ("list", "t0")])
def test_a_deferred_purge_reads_as_one_applied_at_once(operations: list[tuple]) -> None:
    clock = FakeClock()
    eager, lazy = MemoryStore(1_000_000, clock), MemoryStore(1_000_000, clock)
    deferred = []
    for number, operation in enumerate(operations):
        match operation:
            case ("put", name, variant, tags):
                for store in (eager, lazy):
                    tagged(store, name, version=number, clock=clock, variant=variant,
                           tags=tuple(sorted(tags)))
            case ("purge", tag, soft):
                at = clock.now() if soft else None
                eager.purge_nowait(eager.tagged_nowait([tag]), at)
                deferred.append(lazy.defer_purge_nowait(lazy.covered_nowait([tag], []), at))
            case ("settle", count):
                for each in deferred:
                    lazy.settle_nowait(each, count)
            case ("tick", seconds):
                clock.advance(seconds)
            case ("delete", name):
                assert eager.delete_primary_nowait([key(name)]) == (
                    lazy.delete_primary_nowait([key(name)]))
            case ("get", name):
                assert seen(lazy.get_nowait(key(name))) == seen(eager.get_nowait(key(name)))
            case ("list", tag):
                assert lazy.refs_for_tags_nowait([tag]) == eager.refs_for_tags_nowait([tag])
    for name in NAMES:
        assert seen(lazy.get_nowait(key(name))) == seen(eager.get_nowait(key(name)))
    for each in deferred:
        lazy.settle_nowait(each, 10_000)
    assert lazy.stats_nowait() == eager.stats_nowait()


def test_a_deferred_purge_is_in_force_before_it_is_applied(clock: FakeClock) -> None:
    store = MemoryStore(1_000_000, clock)
    for name in "abc":
        tagged(store, name, version=0, clock=clock)
    other = make_entry(url("other"), now=clock.now())
    store.put_nowait(other)
    deferred = store.defer_purge_nowait(store.covered_nowait(["t0"], []), None)
    assert store.stats_nowait()["entries"] == 4  # not applied yet: counted
    assert store.get_nowait(key("a")) is None  # reached: applied
    assert store.refs_for_tags_nowait(["t0"]) == set()
    assert store.get_nowait(other.primary_key) == [other]
    assert store.stats_nowait()["entries"] == 1  # b and c applied by the listing
    assert store.settle_nowait(deferred, 10) == []
    assert deferred.refs == set()


def test_a_put_after_a_deferred_purge_is_not_purged(clock: FakeClock) -> None:
    store = MemoryStore(1_000_000, clock)
    tagged(store, "a", version=0, clock=clock)
    deferred = store.defer_purge_nowait(store.covered_nowait(["t0"], []), None)
    fresh = tagged(store, "a", version=1, clock=clock)
    assert store.get_nowait(key("a")) == [fresh]
    assert store.settle_nowait(deferred, 10) == []
    assert store.get_nowait(key("a")) == [fresh]


def test_a_soft_deferred_purge_serves_stale_copies(clock: FakeClock) -> None:
    store = MemoryStore(1_000_000, clock)
    for name in "ab":
        tagged(store, name, version=0, clock=clock)
    deferred = store.defer_purge_nowait(store.covered_nowait(["t0"], []), clock.now())
    [a] = store.get_nowait(key("a")) or []
    assert a.fresh_until == clock.now()
    assert store.settle_nowait(deferred, 10) == [EntryRef(key("b"), "")]
    [b] = store.get_nowait(key("b")) or []
    assert b.fresh_until == clock.now()


def test_codings_never_revive_an_entry_a_deferred_purge_covers(clock: FakeClock) -> None:
    store = MemoryStore(1_000_000, clock)
    entry = tagged(store, "a", version=0, clock=clock)
    store.defer_purge_nowait(store.covered_nowait(["t0"], []), None)
    assert not store.add_codings_nowait(entry, (("gzip", b"x"),))
    assert store.get_nowait(key("a")) is None


def test_covered_names_tagged_entries_and_every_variant_of_the_keys(clock: FakeClock) -> None:
    store = MemoryStore(1_000_000, clock)
    tagged(store, "a", version=0, clock=clock)
    for variant in ("", "gz"):
        tagged(store, "b", version=0, clock=clock, variant=variant, tags=("t1",))
    assert store.covered_nowait(["t0"], [key("b"), key("none")]) == set(
        map(tuple, as_refs([(key("a"), ""), (key("b"), ""), (key("b"), "gz")])))

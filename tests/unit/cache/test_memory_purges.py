"""MemoryStore under purge marks: in force at once for every operation, applied lazily.

The property test runs the same operations on two stores, one whose marks are applied
at once (every key settled, the mark then applied) and one whose marks stay in force,
their covered keys settled a few at a time at random moments; every read must see the
same entries in both.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.entries import make_entry
from tests.marks import in_force

from stoker.cache.entry import CacheEntry
from stoker.cache.memory import MemoryStore
from stoker.cache.store import as_refs
from stoker.clock import FakeClock
from stoker.purge.list import L1, PurgeMark

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


def apply_at_once(store: MemoryStore, clock: FakeClock, tag: str, soft: bool) -> None:
    mark = in_force(store, clock, soft=soft, tags=(tag,))
    store.settle_nowait(store.primary_keys_nowait())
    store.purges.applied(mark, L1)


class Lazy:
    """A store whose marks stay in force, their covered keys left to settle in steps."""

    def __init__(self, store: MemoryStore, clock: FakeClock) -> None:
        self.store, self.clock = store, clock
        self.todo: list[tuple[PurgeMark, list[str]]] = []

    def purge(self, tag: str, soft: bool) -> None:
        keys = sorted({key for key, _ in self.store.covered_nowait([tag], [])})
        self.todo.append((in_force(self.store, self.clock, soft=soft, tags=(tag,)), keys))

    def settle(self, count: int) -> None:
        for mark, keys in self.todo:
            self.store.settle_nowait(keys[:count])
            del keys[:count]
            if not keys:
                self.store.purges.applied(mark, L1)
        self.todo = [(mark, keys) for mark, keys in self.todo if keys]


@settings(max_examples=500)
@given(OPERATIONS)
@example([("put", "a", "", {"t0"}), ("purge", "t0", False), ("put", "a", "", {"t0"})])
@example([("put", "a", "", {"t0"}), ("purge", "t0", True), ("list", "t0"),
          ("purge", "t0", False), ("list", "t0")])
@example([("put", "a", "", {"t0"}), ("purge", "t0", False), ("settle", 0),
          ("put", "b", "", {"t0"}), ("purge", "t0", True), ("settle", 1), ("get", "a")])
def test_marks_in_force_read_as_marks_applied_at_once(operations: list[tuple]) -> None:
    clock = FakeClock()
    eager = MemoryStore(1_000_000, clock)
    lazy = Lazy(MemoryStore(1_000_000, clock), clock)
    for number, operation in enumerate(operations):
        match operation:
            case ("put", name, variant, tags):
                for store in (eager, lazy.store):
                    tagged(store, name, version=number, clock=clock, variant=variant,
                           tags=tuple(sorted(tags)))
            case ("purge", tag, soft):
                apply_at_once(eager, clock, tag, soft)
                lazy.purge(tag, soft)
            case ("settle", count):
                lazy.settle(count)
            case ("tick", seconds):
                clock.advance(seconds)
            case ("delete", name):
                assert eager.delete_primary_nowait([key(name)]) == (
                    lazy.store.delete_primary_nowait([key(name)]))
            case ("get", name):
                assert seen(lazy.store.get_nowait(key(name))) == seen(eager.get_nowait(key(name)))
            case ("list", tag):
                assert lazy.store.refs_for_tags_nowait([tag]) == eager.refs_for_tags_nowait([tag])
    for name in NAMES:
        assert seen(lazy.store.get_nowait(key(name))) == seen(eager.get_nowait(key(name)))
    lazy.settle(10_000)
    assert lazy.store.stats_nowait() == eager.stats_nowait()
    assert not lazy.store.purges.in_force(L1)


def test_a_mark_is_in_force_before_it_is_applied(clock: FakeClock) -> None:
    store = MemoryStore(1_000_000, clock)
    for name in "abc":
        tagged(store, name, version=0, clock=clock)
    other = make_entry(url("other"), now=clock.now())
    store.put_nowait(other)
    mark = in_force(store, clock, soft=False, tags=("t0",))
    assert store.stats_nowait()["entries"] == 4  # not applied yet: counted
    assert store.get_nowait(key("a")) is None  # reached: applied
    assert store.refs_for_tags_nowait(["t0"]) == set()
    assert store.get_nowait(other.primary_key) == [other]
    assert store.stats_nowait()["entries"] == 1  # b and c applied by the listing
    assert sorted(store.take_changed(mark.seq)) == [(key(name), "") for name in "abc"]


def test_a_put_after_a_mark_is_not_purged_by_it(clock: FakeClock) -> None:
    store = MemoryStore(1_000_000, clock)
    tagged(store, "a", version=0, clock=clock)
    mark = in_force(store, clock, soft=False, tags=("t0",))
    fresh = tagged(store, "a", version=1, clock=clock)
    assert store.get_nowait(key("a")) == [fresh]
    store.settle_nowait([key("a")])
    assert store.get_nowait(key("a")) == [fresh]
    assert store.take_changed(mark.seq) == []  # the put replaced the copy it covered


def test_a_new_variant_does_not_spare_the_old_ones(clock: FakeClock) -> None:
    store = MemoryStore(1_000_000, clock)
    tagged(store, "a", version=0, clock=clock)
    in_force(store, clock, soft=False, tags=("t0",))
    fresh = tagged(store, "a", version=1, clock=clock, variant="gz")
    assert store.get_nowait(key("a")) == [fresh]


def test_a_soft_mark_serves_stale_copies(clock: FakeClock) -> None:
    store = MemoryStore(1_000_000, clock)
    for name in "ab":
        tagged(store, name, version=0, clock=clock)
    mark = in_force(store, clock, soft=True, tags=("t0",))
    [a] = store.get_nowait(key("a")) or []
    assert a.fresh_until == clock.now()
    store.settle_nowait([key("b")])
    [b] = store.get_nowait(key("b")) or []
    assert b.fresh_until == clock.now()
    assert sorted(store.take_changed(mark.seq)) == [(key("a"), ""), (key("b"), "")]


def test_a_mark_applied_is_no_longer_checked(clock: FakeClock) -> None:
    store = MemoryStore(1_000_000, clock)
    mark = in_force(store, clock, soft=False, tags=("t0",))
    store.purges.applied(mark, L1)
    late = tagged(store, "a", version=0, clock=clock)  # stored after it: checked already
    assert store.get_nowait(key("a")) == [late]


def test_codings_never_revive_an_entry_a_mark_covers(clock: FakeClock) -> None:
    store = MemoryStore(1_000_000, clock)
    entry = tagged(store, "a", version=0, clock=clock)
    in_force(store, clock, soft=False, tags=("t0",))
    assert not store.add_codings_nowait(entry, (("gzip", b"x"),))
    assert store.get_nowait(key("a")) is None


def test_covered_names_tagged_entries_and_every_variant_of_the_keys(clock: FakeClock) -> None:
    store = MemoryStore(1_000_000, clock)
    tagged(store, "a", version=0, clock=clock)
    for variant in ("", "gz"):
        tagged(store, "b", version=0, clock=clock, variant=variant, tags=("t1",))
    assert store.covered_nowait(["t0"], [key("b"), key("none")]) == set(
        map(tuple, as_refs([(key("a"), ""), (key("b"), ""), (key("b"), "gz")])))

"""MemoryStore: LRU by primary key within a byte bound, exact tag index."""

from __future__ import annotations

import gc

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.entries import make_entry
from tests.marks import in_force

from stoker.cache.memory import MemoryStore
from stoker.cache.store import EntryRef
from stoker.clock import FakeClock

ENTRY_SIZE = make_entry("https://example.com/a").meta_size()


def url(name: str) -> str:
    return f"https://example.com/{name}"


def key(name: str) -> str:
    return make_entry(url(name)).primary_key


def test_evicts_the_least_recently_used_key(clock: FakeClock) -> None:
    store = MemoryStore(3 * ENTRY_SIZE, clock)
    for name in "abc":
        store.put_nowait(make_entry(url(name)))
    assert store.get_nowait(key("a")) is not None  # a becomes most recent
    store.put_nowait(make_entry(url("d")))
    assert store.get_nowait(key("b")) is None
    assert [store.get_nowait(key(name)) is not None for name in "acd"] == [True] * 3
    assert store.stats_nowait()["bytes"] <= 3 * ENTRY_SIZE


def test_variants_of_a_key_are_evicted_together(clock: FakeClock) -> None:
    store = MemoryStore(3 * ENTRY_SIZE, clock)
    store.put_nowait(make_entry(url("x"), variant="1"))
    store.put_nowait(make_entry(url("x"), variant="2"))
    store.put_nowait(make_entry(url("y")))
    store.put_nowait(make_entry(url("z")))
    assert store.get_nowait(key("x")) is None
    assert store.stats_nowait()["entries"] == 2


def test_an_entry_larger_than_the_bound_is_not_stored(clock: FakeClock) -> None:
    store = MemoryStore(10 * ENTRY_SIZE, clock)
    small = make_entry(url("a"))
    huge = make_entry(url("a"), body=b"x" * 20 * ENTRY_SIZE, body_size=20 * ENTRY_SIZE)
    store.put_nowait(small)
    store.put_nowait(huge)
    # The older version is dropped too: L1 must not serve it instead of the new one.
    assert store.get_nowait(small.primary_key) is None
    assert store.stats_nowait() == {"entries": 0, "bytes": 0, "max_bytes": 10 * ENTRY_SIZE}


def test_eviction_updates_the_tag_index(clock: FakeClock) -> None:
    first, second = make_entry(url("a"), tags=("t",)), make_entry(url("b"), tags=("u",))
    store = MemoryStore(second.meta_size(), clock)
    store.put_nowait(first)
    store.put_nowait(second)
    assert store.refs_for_tags_nowait(["t"]) == set()
    assert store.refs_for_tags_nowait(["u"]) == {EntryRef(key("b"), "")}


def test_expired_entries_are_dropped_on_get(clock: FakeClock) -> None:
    store = MemoryStore(10 * ENTRY_SIZE, clock)
    store.put_nowait(make_entry(url("a"), variant="short", keep=10.0))
    store.put_nowait(make_entry(url("a"), variant="long", keep=100.0))
    clock.advance(10.0)
    live = store.get_nowait(key("a"))
    assert live is not None
    assert [entry.variant for entry in live] == ["long"]
    assert store.stats_nowait()["entries"] == 1
    clock.advance(90.0)
    assert store.get_nowait(key("a")) is None
    assert store.stats_nowait()["entries"] == 0


def test_delete_primary_nowait_counts_live_variants(clock: FakeClock) -> None:
    store = MemoryStore(10 * ENTRY_SIZE, clock)
    store.put_nowait(make_entry(url("a"), variant="1"))
    store.put_nowait(make_entry(url("a"), variant="2", keep=5.0))
    clock.advance(5.0)
    assert store.delete_primary_nowait([key("a")]) == 1
    assert store.stats_nowait()["bytes"] == 0


operations = st.lists(
    st.tuples(st.sampled_from("abcdef"), st.sampled_from("xy"), st.integers(0, 3 * ENTRY_SIZE)),
    max_size=40,
)


@settings(max_examples=80)
@given(operations)
def test_bytes_stay_within_bound_and_match_entries(ops: list[tuple[str, str, int]]) -> None:
    clock = FakeClock()
    bound = 4 * ENTRY_SIZE
    store = MemoryStore(bound, clock)
    for name, variant, extra in ops:
        body = b"b" * extra
        store.put_nowait(make_entry(url(name), variant=variant, body=body, body_size=extra))
        held = [e for n in "abcdef" for e in store.get_nowait(key(n)) or []]
        stats = store.stats_nowait()
        assert stats["bytes"] <= bound
        assert stats["bytes"] == sum(entry.meta_size() for entry in held)
        assert stats["entries"] == len(held)


def test_a_mark_changes_live_entries_only_and_names_them(clock: FakeClock) -> None:
    store = MemoryStore(100 * ENTRY_SIZE, clock)
    now = clock.now()
    store.put_nowait(make_entry(url("short"), now=now, keep=10.0, tags=("t",)))
    for name in ("a", "b"):
        store.put_nowait(make_entry(url(name), now=now, tags=("t",)))
    clock.advance(20.0)  # "short" expired
    covered = store.covered_nowait(["t"], [])
    assert len(covered) == 3  # the snapshot holds what the index holds, expired included
    soft = in_force(store, clock, soft=True, tags=("t",))
    store.settle_nowait(sorted({key for key, _ in covered}))
    assert sorted(store.take_changed(soft.seq)) == [(key("a"), ""), (key("b"), "")]
    assert all(entry.fresh_until == clock.now() for entry in store.get_nowait(key("a")) or [])
    hard = in_force(store, clock, soft=False, tags=("t",))
    store.settle_nowait(sorted({key for key, _ in covered}))
    assert len(store.take_changed(hard.seq)) == 2
    assert store.covered_nowait(["t"], []) == {(key("short"), "")}
    assert store.primary_keys_nowait() == [key("short")]


def test_the_tag_index_adds_no_object_the_collector_keeps_tracking() -> None:
    """The tag index holds plain tuples (untracked once collected), not EntryRefs."""
    store = MemoryStore(10_000_000, FakeClock())
    entries = [make_entry(f"https://example.com/{i}", tags=("all", f"page-{i}"))
               for i in range(50)]

    def tracked(kind: type) -> int:
        return sum(type(each) is kind for each in gc.get_objects())

    gc.collect()
    before = tracked(EntryRef)
    for entry in entries:
        store.put_nowait(entry)
    gc.collect()
    assert tracked(EntryRef) == before  # the old index kept 50 more
    assert store.covered_nowait(["page-3"], []) == {(entries[3].primary_key, "")}
    assert store.refs_for_tags_nowait(["all"]) == {EntryRef(e.primary_key, "") for e in entries}

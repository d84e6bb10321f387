"""WarmReads: warm stores, and the first visitor read of each."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.cache.warm_reads import WarmReads


def test_the_first_read_after_a_warm_store_counts_once() -> None:
    reads = WarmReads()
    reads.note_read("https://a/x")  # not warmed: not counted
    reads.note_stored("https://a/x")
    reads.note_read("https://a/x")
    reads.note_read("https://a/x")
    assert (reads.stored, reads.read) == (1, 1)
    reads.note_stored("https://a/x")  # warmed again: its next read counts again
    reads.note_read("https://a/x")
    assert (reads.stored, reads.read) == (2, 2)


def test_the_oldest_store_is_forgotten_beyond_the_bound() -> None:
    reads = WarmReads(max_urls=2)
    for url in ("a", "b", "c"):
        reads.note_stored(url)
    for url in ("a", "b", "c"):
        reads.note_read(url)
    assert (reads.stored, reads.read) == (3, 2)


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_urls"):
        WarmReads(max_urls=0)


@given(st.lists(st.tuples(st.booleans(), st.sampled_from("abcd")), max_size=60),
       st.integers(min_value=1, max_value=5))
def test_reads_never_exceed_stores_nor_distinct_store_read_pairs(
        events: list[tuple[bool, str]], bound: int) -> None:
    reads = WarmReads(max_urls=bound)
    pending: set[str] = set()
    most = 0
    for warm, url in events:
        if warm:
            reads.note_stored(url)
            pending.add(url)
        else:
            reads.note_read(url)
            if url in pending:
                most += 1
                pending.discard(url)
    assert reads.read <= min(reads.stored, most)
    if bound >= 4:  # nothing forgotten: every first read counted
        assert reads.read == most

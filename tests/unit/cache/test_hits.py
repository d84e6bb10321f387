"""The in-memory hit counter: counts, drain, and the bound that keeps the most visited."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.cache.hits import MAX_URL_LENGTH, HitCounter, countable

A, B, C = "https://www.example.com/a", "https://www.example.com/b", "https://www.example.com/c"


def test_counts_hits_and_misses_per_url() -> None:
    counter = HitCounter()
    counter.hit(A)
    counter.hit(A)
    counter.miss(A)
    counter.miss(B)
    assert counter.drain() == {A: (2, 1), B: (0, 1)}


def test_drain_swaps_the_table() -> None:
    counter = HitCounter()
    counter.hit(A)
    assert counter.drain() == {A: (1, 0)}
    assert len(counter) == 0
    assert counter.drain() == {}
    counter.miss(A)
    assert counter.drain() == {A: (0, 1)}


def test_urls_over_the_length_cap_are_not_counted() -> None:
    counter = HitCounter()
    long_url = "https://www.example.com/" + "x" * MAX_URL_LENGTH
    counter.hit(long_url)
    counter.hit(A)
    assert counter.drain() == {A: (1, 0)}
    assert counter.dropped == 1


@pytest.mark.parametrize(
    ("url", "expected"),
    [(A, True), ("/" + "x" * (MAX_URL_LENGTH - 1), True), ("/" + "x" * MAX_URL_LENGTH, False),
     ("/" + "é" * (MAX_URL_LENGTH // 2), False),   # 2 bytes each in UTF-8
     ("/a\x00b", False), ("/\ud800", False)],
)
def test_countable_urls_fit_a_database_index(url: str, expected: bool) -> None:
    assert countable(url) is expected


def test_a_full_table_drops_its_least_visited_quarter() -> None:
    counter = HitCounter(max_urls=8)
    for n in range(8):
        for _ in range(n + 1):
            counter.hit(f"/u{n}")
    counter.miss("/new")
    drained = counter.drain()
    assert set(drained) == {"/u2", "/u3", "/u4", "/u5", "/u6", "/u7", "/new"}
    assert counter.dropped == 1 + 2


def test_among_equals_the_earliest_added_is_dropped_first() -> None:
    counter = HitCounter(max_urls=4)
    for url in ("/old", "/mid", "/hot", "/late"):
        counter.hit(url)
    counter.hit("/hot")
    counter.hit("/new")
    assert set(counter.drain()) == {"/mid", "/hot", "/late", "/new"}


def test_a_hot_url_seen_after_the_table_filled_gets_in() -> None:
    counter = HitCounter(max_urls=4)
    for n in range(100):
        counter.hit(f"/junk{n}")
    for _ in range(50):
        counter.hit(C)
    assert counter.drain()[C] == (50, 0)


def test_max_urls_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_urls"):
        HitCounter(0)


@given(max_urls=st.integers(1, 20),
       visits=st.lists(st.tuples(st.integers(0, 40), st.booleans()), max_size=300))
def test_bounded_and_every_visit_counted_or_dropped(
        max_urls: int, visits: list[tuple[int, bool]]) -> None:
    counter = HitCounter(max_urls)
    for n, hit in visits:
        (counter.hit if hit else counter.miss)(f"/p{n}")
        assert len(counter) <= max_urls
    drained = counter.drain()
    assert sum(h + m for h, m in drained.values()) + counter.dropped == len(visits)
    assert sum(h for h, _ in drained.values()) <= sum(1 for _, hit in visits if hit)


def test_counts_a_flush_could_not_store_go_back_and_add_up() -> None:
    counter = HitCounter(10)
    counter.hit(A)
    counter.miss(B)
    unstored = counter.drain()
    counter.hit(A)  # counted while the store did not answer
    counter.restore(unstored)
    assert counter.drain() == {A: (2, 0), B: (0, 1)}
    assert counter.drain() == {}

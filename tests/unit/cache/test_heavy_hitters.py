"""The space-saving counter: its guarantees on any stream, and merging summaries."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.cache.heavy_hitters import Counted, SpaceSaving, merged

streams = st.lists(st.integers(min_value=0, max_value=30), max_size=300)
capacities = st.integers(min_value=1, max_value=12)


def counted(stream: list[int], capacity: int) -> SpaceSaving[int]:
    summary: SpaceSaving[int] = SpaceSaving(capacity)
    for key in stream:
        summary.add(key)
    return summary


@given(streams, capacities)
def test_counts_sum_to_the_stream_and_bound_the_true_frequencies(
        stream: list[int], capacity: int) -> None:
    summary = counted(stream, capacity)
    truth = Counter(stream)
    kept = summary.top()
    assert len(kept) == len(summary) <= capacity
    assert sum(item.count for item in kept) == summary.total == len(stream)
    for item in kept:
        assert item.count - item.error <= truth[item.key] <= item.count


@given(streams, capacities)
def test_every_key_more_frequent_than_total_over_capacity_is_kept(
        stream: list[int], capacity: int) -> None:
    summary = counted(stream, capacity)
    kept = {item.key for item in summary.top()}
    assert {key for key, seen in Counter(stream).items()
            if seen > len(stream) / capacity} <= kept


@given(streams, capacities)
def test_counts_are_exact_while_the_keys_fit(stream: list[int], capacity: int) -> None:
    fitting = [key for key in stream if key < capacity]
    summary = counted(fitting, capacity)
    assert {item.key: (item.count, item.error) for item in summary.top()} == {
        key: (seen, 0) for key, seen in Counter(fitting).items()}


@given(streams, capacities, st.integers(min_value=0, max_value=15))
def test_top_is_ranked_and_limited(stream: list[int], capacity: int, limit: int) -> None:
    top = counted(stream, capacity).top(limit)
    assert len(top) <= limit
    assert [item.count for item in top] == sorted((item.count for item in top), reverse=True)


def test_a_newcomer_takes_the_smallest_place_and_inherits_its_count() -> None:
    summary: SpaceSaving[str] = SpaceSaving(2)
    for key in ("a", "a", "b", "c"):
        summary.add(key)
    assert summary.top() == [Counted("a", 2, 0), Counted("c", 2, 1)]


def test_weights_count_as_that_many_arrivals() -> None:
    summary: SpaceSaving[str] = SpaceSaving(1)
    summary.add("a", 3)
    summary.add("b", 2)
    assert summary.top() == [Counted("b", 5, 3)] and summary.total == 5


def test_a_capacity_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        SpaceSaving(0)


@given(st.lists(streams, max_size=4), capacities)
def test_merged_summaries_add_up_and_keep_the_bound(streams_: list[list[int]],
                                                    capacity: int) -> None:
    summaries = [counted(stream, capacity).top() for stream in streams_]
    together = merged(summaries, capacity)
    assert len(together) <= capacity
    assert [item.count for item in together] == sorted(
        (item.count for item in together), reverse=True)
    for item in together:
        assert item.count == sum(kept.count for summary in summaries for kept in summary
                                 if kept.key == item.key)
    if all(len(set(stream)) <= capacity for stream in streams_) and len(
            set().union(*map(set, streams_))) <= capacity:
        assert {item.key: item.count for item in together} == Counter(
            key for stream in streams_ for key in stream)  # exact while everything fits


@given(streams, capacities)
def test_one_summary_merged_is_itself(stream: list[int], capacity: int) -> None:
    top = counted(stream, capacity).top()
    assert merged([top], capacity) == top

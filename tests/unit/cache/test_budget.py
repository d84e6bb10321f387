"""Property tests of how ``l1_max_bytes`` is shared (stoker.cache.budget)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stoker.cache.budget import (
    COUNTED_URL_BYTES,
    FLOOR,
    MAX_COUNTED_URLS,
    MAX_MEMO_KEYS,
    MAX_QUEUE_BYTES,
    MEMO_KEY_BYTES,
    MIN_COUNTED_URLS,
    MIN_MEMO_KEYS,
    MIN_QUEUE_BYTES,
    share_memory,
)

SIZES = st.integers(min_value=0, max_value=1 << 42)
QUEUES = st.one_of(st.none(), st.integers(min_value=0, max_value=1 << 30))
MIB = 1024 * 1024


def _total(size: int, queue: int | None) -> int:
    budget = share_memory(size, queue)
    return (budget.l1_bytes + budget.memo_keys * MEMO_KEY_BYTES
            + budget.counted_urls * COUNTED_URL_BYTES + budget.queue_bytes)


@given(SIZES, QUEUES)
def test_the_parts_add_up_to_the_setting_when_they_fit(size: int, queue: int | None) -> None:
    budget = share_memory(size, queue)
    others = _total(size, queue) - budget.l1_bytes
    assert _total(size, queue) == size if others <= size else budget.l1_bytes == 0
    assert others >= FLOOR + budget.queue_bytes
    assert MIN_MEMO_KEYS <= budget.memo_keys <= MAX_MEMO_KEYS
    assert MIN_COUNTED_URLS <= budget.counted_urls <= MAX_COUNTED_URLS
    if queue is None:
        assert MIN_QUEUE_BYTES <= budget.queue_bytes <= MAX_QUEUE_BYTES
    else:
        assert budget.queue_bytes == queue  # the user's own bound is kept


@given(SIZES, SIZES, QUEUES)
def test_more_memory_never_shrinks_a_part(a: int, b: int, queue: int | None) -> None:
    small, large = share_memory(min(a, b), queue), share_memory(max(a, b), queue)
    assert small.l1_bytes <= large.l1_bytes
    assert small.memo_keys <= large.memo_keys
    assert small.counted_urls <= large.counted_urls
    assert small.queue_bytes <= large.queue_bytes


def test_the_default_and_a_small_bound() -> None:
    default = share_memory(256 * MIB)
    assert (default.memo_keys, default.counted_urls, default.queue_bytes) == (
        16_384, 26_214, 16 * MIB)
    assert default.l1_bytes == 256 * MIB - 16_384 * 512 - 26_214 * 320 - 16 * MIB
    assert share_memory(64 * MIB).queue_bytes == 4 * MIB
    assert share_memory(0).l1_bytes == 0  # l1_max_bytes = 0 still memoises and counts

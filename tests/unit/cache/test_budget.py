"""Property tests of how ``l1_max_bytes`` is shared (stoker.cache.budget)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stoker.cache.budget import (
    COUNTED_URL_BYTES,
    FLOOR,
    MAX_COUNTED_URLS,
    MAX_MEMO_KEYS,
    MEMO_KEY_BYTES,
    MIN_COUNTED_URLS,
    MIN_MEMO_KEYS,
    share_memory,
)

SIZES = st.integers(min_value=0, max_value=1 << 42)


def _total(size: int) -> int:
    budget = share_memory(size)
    return (budget.l1_bytes + budget.memo_keys * MEMO_KEY_BYTES
            + budget.counted_urls * COUNTED_URL_BYTES)


@given(SIZES)
def test_the_parts_never_exceed_the_setting_or_the_floor(size: int) -> None:
    budget = share_memory(size)
    assert _total(size) <= max(size, FLOOR)
    assert budget.l1_bytes >= 0
    assert MIN_MEMO_KEYS <= budget.memo_keys <= MAX_MEMO_KEYS
    assert MIN_COUNTED_URLS <= budget.counted_urls <= MAX_COUNTED_URLS


@given(SIZES, SIZES)
def test_more_memory_never_shrinks_a_part(a: int, b: int) -> None:
    small, large = share_memory(min(a, b)), share_memory(max(a, b))
    assert small.l1_bytes <= large.l1_bytes
    assert small.memo_keys <= large.memo_keys
    assert small.counted_urls <= large.counted_urls


def test_the_default_and_a_small_bound() -> None:
    default = share_memory(256 * 1024 * 1024)
    assert (default.memo_keys, default.counted_urls) == (16_384, 26_214)
    assert default.l1_bytes == 256 * 1024 * 1024 - 16_384 * 512 - 26_214 * 320
    assert share_memory(0).l1_bytes == 0  # l1_max_bytes = 0 still memoises and counts

"""How ``l1_max_bytes`` is shared between cached entries and the per-URL tables. Pure.

Besides L1, a process keeps two tables that grow with the distinct URLs it sees,
not with what L1 holds: the fast path's key memo and the hit counter.  Each gets
a share of ``l1_max_bytes`` (1/:data:`SHARE`, in entries at a typical per-entry
cost measured with ``tracemalloc``) and L1 gets the rest, so one setting bounds
all three.

Invariants of :func:`share_memory`:
- ``l1_bytes + memo_keys * MEMO_KEY_BYTES + counted_urls * COUNTED_URL_BYTES``
  is at most ``max(l1_max_bytes, FLOOR)``, where :data:`FLOOR` is the two tables
  at their minimum sizes (a process always memoises and counts a little);
- each table's size lies within its minimum and maximum; ``l1_bytes >= 0``;
- every part is non-decreasing in ``l1_max_bytes``.
"""

from __future__ import annotations

from dataclasses import dataclass

SHARE = 32
"""Each per-URL table may take 1/SHARE of ``l1_max_bytes``."""
MEMO_KEY_BYTES = 512
"""Bytes one memoised key costs (request parts and primary key of a ~60-character URL: ~380)."""
COUNTED_URL_BYTES = 320
"""Bytes one counted URL costs (the URL and its two counters for ~60 characters: ~200)."""
MIN_MEMO_KEYS, MAX_MEMO_KEYS = 256, 65_536
MIN_COUNTED_URLS, MAX_COUNTED_URLS = 1_024, 100_000
FLOOR = MIN_MEMO_KEYS * MEMO_KEY_BYTES + MIN_COUNTED_URLS * COUNTED_URL_BYTES


@dataclass(frozen=True, slots=True)
class MemoryBudget:
    """What each holder of per-URL memory may keep (see the module invariants)."""

    l1_bytes: int
    memo_keys: int
    counted_urls: int


def share_memory(l1_max_bytes: int) -> MemoryBudget:
    """Split ``l1_max_bytes`` between L1, the key memo and the hit counter."""
    share = max(0, l1_max_bytes) // SHARE
    memo_keys = _clamp(share // MEMO_KEY_BYTES, MIN_MEMO_KEYS, MAX_MEMO_KEYS)
    counted_urls = _clamp(share // COUNTED_URL_BYTES, MIN_COUNTED_URLS, MAX_COUNTED_URLS)
    tables = memo_keys * MEMO_KEY_BYTES + counted_urls * COUNTED_URL_BYTES
    return MemoryBudget(max(0, l1_max_bytes - tables), memo_keys, counted_urls)


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))

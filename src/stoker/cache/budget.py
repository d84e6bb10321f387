"""How ``l1_max_bytes`` is shared between cached entries and what else the cache keeps in
memory. Pure.

Besides L1, a process keeps two tables that grow with the distinct URLs it sees,
not with what L1 holds (the fast path's key memo and the hit counter), and the
L2 write queue, whose entries may outlive their L1 copies while SQLite catches
up.  Each table gets a share of ``l1_max_bytes`` (1/:data:`SHARE`, in entries
at a typical per-entry cost measured with ``tracemalloc``), the queue
``l2_queue_max_bytes`` (by default 1/:data:`QUEUE_SHARE`), and L1 the rest, so
one setting bounds all four.

Invariants of :func:`share_memory`:
- the parts (``l1_bytes + memo_keys * MEMO_KEY_BYTES + counted_urls *
  COUNTED_URL_BYTES + queue_bytes``) total exactly ``l1_max_bytes`` when the
  tables and the queue fit in it; otherwise ``l1_bytes`` is 0 (a process always
  memoises and counts a little: :data:`FLOOR`, the tables at their minimum);
- each table's size lies within its minimum and maximum; ``l1_bytes >= 0``; the
  default queue lies within :data:`MIN_QUEUE_BYTES` and :data:`MAX_QUEUE_BYTES`;
- every part is non-decreasing in ``l1_max_bytes``.
"""

from __future__ import annotations

from dataclasses import dataclass

SHARE = 32
"""Each per-URL table may take 1/SHARE of ``l1_max_bytes``."""
QUEUE_SHARE = 16
"""The L2 write queue takes 1/QUEUE_SHARE of ``l1_max_bytes`` unless set."""
MIN_QUEUE_BYTES, MAX_QUEUE_BYTES = 1024 * 1024, 64 * 1024 * 1024
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
    queue_bytes: int


def share_memory(l1_max_bytes: int, queue_bytes: int | None = None) -> MemoryBudget:
    """Split ``l1_max_bytes`` between L1, the key memo, the hit counter and the L2 write
    queue (``queue_bytes`` when the user set it, else its default share)."""
    l1_max_bytes = max(0, l1_max_bytes)
    share = l1_max_bytes // SHARE
    memo_keys = _clamp(share // MEMO_KEY_BYTES, MIN_MEMO_KEYS, MAX_MEMO_KEYS)
    counted_urls = _clamp(share // COUNTED_URL_BYTES, MIN_COUNTED_URLS, MAX_COUNTED_URLS)
    if queue_bytes is None:
        queue_bytes = _clamp(l1_max_bytes // QUEUE_SHARE, MIN_QUEUE_BYTES, MAX_QUEUE_BYTES)
    taken = memo_keys * MEMO_KEY_BYTES + counted_urls * COUNTED_URL_BYTES + queue_bytes
    return MemoryBudget(max(0, l1_max_bytes - taken), memo_keys, counted_urls, queue_bytes)


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))

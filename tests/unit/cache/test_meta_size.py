"""``CacheEntry.meta_size`` is what an entry really costs in L1 (tracemalloc), within 5 %."""

from __future__ import annotations

import gc
import tracemalloc

import pytest
from tests.entries import make_entry

from stoker.cache.entry import CacheEntry
from stoker.cache.memory import MemoryStore
from stoker.clock import FakeClock

HEADERS = [(b"content-type", b"text/html; charset=utf-8"),
           (b"cache-control", b"public, max-age=3600"),
           (b"date", b"Mon, 30 Nov 2026 16:00:00 GMT"), (b"etag", b'"abcdef123456"'),
           (b"last-modified", b"Mon, 30 Nov 2026 15:00:00 GMT"), (b"server", b"nginx"),
           (b"x-powered-by", b"PHP/8.2"), (b"vary", b"Accept-Encoding")]
ENTRIES = 2000


def _copy(data: bytes) -> bytes:
    return bytes(bytearray(data))  # a fresh object, as parsing a response makes


def _entry(i: int, headers: int, body: int, tags: int, encoded: bool) -> CacheEntry:
    return make_entry(
        f"https://www.example.com/blog/2026/11/a-post-title-{i}/", fresh=3600, keep=7200,
        headers=tuple((_copy(k), _copy(v)) for k, v in HEADERS[:headers]),
        body=b"x" * body + bytes([i % 250]), body_size=body + 1,
        tags=tuple(f"tag{t}-{i}" for t in range(tags)),
        encoded=(("br", b"b" * 300 + bytes([i % 250])), ("gzip", b"g" * 400 + bytes([i % 250])))
        if encoded else ())


@pytest.mark.parametrize(("headers", "body", "tags", "encoded"), [
    (1, 20_000, 0, False), (8, 20_000, 1, False), (8, 2_000, 2, False), (3, 200, 0, False),
    (3, 20_000, 0, True), (8, 5_000, 1, True),
])
def test_accounted_bytes_match_what_the_entries_really_take(
        headers: int, body: int, tags: int, encoded: bool) -> None:
    store = MemoryStore(1 << 40, FakeClock())
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        entries = [_entry(i, headers, body, tags, encoded) for i in range(ENTRIES)]
        accounted = 0
        for entry in entries:
            store.put_nowait(entry)
            accounted += entry.meta_size()
            for coding in (*entry.codings, "identity"):
                entry.served(coding).wire_head()  # the copies a served entry keeps
        del entries
        gc.collect()
        real = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 0.95 <= real / accounted <= 1.05, (real / ENTRIES, accounted / ENTRIES)

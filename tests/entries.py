"""Test support for cache tiers (like ``stoker.clock.FakeClock``): entry builders.

Shared by the contract suite and unit tests of every backend, so each new
backend's tests build entries the same way.  Nothing here touches I/O.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from stoker.cache.entry import CacheEntry

VERSION = "v1"


def make_entry(
    url: str = "https://example.com/a",
    *,
    variant: str = "",
    now: float = 1_700_000_000.0,
    fresh: float = 60.0,
    stale: float = 120.0,
    error: float = 300.0,
    keep: float = 600.0,
    version: str = VERSION,
    **fields: Any,
) -> CacheEntry:
    """An entry for ``url`` stored at ``now``, windows given as seconds from ``now``.

    The primary key is ``f"{version}|GET|{url}"``; ``fields`` override anything.
    """
    entry = CacheEntry(
        primary_key=f"{version}|GET|{url}",
        variant=variant,
        url=url,
        status=200,
        headers=((b"content-type", b"text/html; charset=utf-8"),),
        body=b"<p>hello</p>",
        body_file=None,
        body_size=12,
        response_time=now,
        initial_age=0.0,
        fresh_until=now + fresh,
        stale_until=now + stale,
        error_until=now + error,
        keep_until=now + keep,
        stored_at=now,
        stale_ok=True,  # most responses may be served stale
    )
    return replace(entry, **fields)

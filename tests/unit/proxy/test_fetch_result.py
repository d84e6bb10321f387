"""What a fetch's result says was not stored, and why."""

from __future__ import annotations

import pytest

from stoker.proxy.fetched import FetchKind, FetchResult


@pytest.mark.parametrize(("result", "reason"), [
    (FetchResult(FetchKind.PASSED, None, 200, "no-freshness"), "no-freshness"),
    (FetchResult(FetchKind.PASSED, None, 200, "cookie"), "cookie"),
    (FetchResult(FetchKind.STALE, None, 304, "no-store"), "no-store"),  # a 304 dropped the entry
    (FetchResult(FetchKind.STALE, None, 502, "origin unavailable"), None),  # stale-if-error
    (FetchResult(FetchKind.FAILED, None, 504, "timed out"), None),
    (FetchResult(FetchKind.STORED, None, 200), None),
    (FetchResult(FetchKind.REFRESHED, None, 304), None),
    (FetchResult(FetchKind.UNSHARED, None, 304, "purged"), "purged"),  # purged while revalidated
])
def test_only_a_response_the_cache_refused_is_not_stored(result: FetchResult,
                                                        reason: str | None) -> None:
    assert result.not_stored == reason

"""Access-log formatting and redaction (pure)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.adapters.access_log import Entry, cache_outcome, combined_line, json_line
from stoker.cache.outcome import GENERATED, Kind, Outcome
from stoker.proxy.log_record import REDACTED, redact_query

ENTRY = Entry(at=1_764_504_000.0, client="203.0.113.7", method="GET", target="/a?b=1",
              protocol="HTTP/1.1", status=200, size=20480, duration=0.0123, origin=0.0101,
              cache="miss", referer="", agent='curl "8"')


def test_combined_line_is_the_combined_format_with_the_cache_status() -> None:
    assert combined_line(ENTRY) == (
        '203.0.113.7 - - [30/Nov/2025:12:00:00 +0000] "GET /a?b=1 HTTP/1.1" 200 20480 "-" '
        '"curl \\"8\\"" miss 12.30 10.10')


def test_json_line() -> None:
    assert json.loads(json_line(ENTRY)) == {
        "time": "2025-11-30T12:00:00+00:00", "client": "203.0.113.7", "method": "GET",
        "url": "/a?b=1", "status": 200, "bytes": 20480, "duration_ms": 12.3,
        "origin_ms": 10.1, "cache": "miss"}


@pytest.mark.parametrize(("query", "expected"), [
    ("token=abc&page=2", f"token={REDACTED}&page=2"),
    ("Token=abc", f"Token={REDACTED}"),
    ("page=2", "page=2"),
    ("token", "token"),
    ("", ""),
    ("a=1&key=x&key=y", f"a=1&key={REDACTED}&key={REDACTED}"),
])
def test_redact_query(query: str, expected: str) -> None:
    assert redact_query(query, ["token", "key"]) == expected


@given(st.text(alphabet="abcdeftokn=&%", max_size=40))
def test_a_redacted_value_never_survives(query: str) -> None:
    for member in redact_query(query, ["token"]).split("&"):
        name, sep, value = member.partition("=")
        if sep and name.lower() == "token":
            assert value == REDACTED


@pytest.mark.parametrize(("outcome", "word"), [
    (Outcome(Kind.HIT, ttl=30), "hit"),
    (Outcome(Kind.STALE_SWR, ttl=-1, detail="stale-while-revalidate"), "stale"),
    (Outcome(Kind.STALE_ERROR, detail="stale-if-error"), "stale"),
    (Outcome(Kind.COLLAPSED, fwd="uri-miss", fwd_status=200), "collapsed"),
    (Outcome(Kind.BYPASS, fwd="bypass", fwd_status=200, detail="cookie"), "bypass"),
    (Outcome(Kind.BYPASS, fwd="method", fwd_status=201), "bypass"),
    (Outcome(Kind.BYPASS, fwd="request", fwd_status=200), "bypass"),
    (Outcome(Kind.MISS, fwd="uri-miss", fwd_status=200, stored=True), "miss"),
    (Outcome(Kind.MISS, fwd="vary-miss", fwd_status=200, stored=True), "miss"),
    (Outcome(Kind.PASS, fwd="uri-miss", fwd_status=200, detail="no-freshness"), "miss"),
    (Outcome(Kind.REVALIDATED, fwd="stale", fwd_status=304, stored=True), "miss"),
    (Outcome(Kind.ERROR, fwd="uri-miss", fwd_status=502, detail="origin-error"), "miss"),
    (Outcome(Kind.ERROR, detail="bad-request"), "miss"),
    (GENERATED, "miss"),
])
def test_cache_outcome(outcome: Outcome, word: str) -> None:
    assert cache_outcome(outcome) == word

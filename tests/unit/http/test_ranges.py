"""Tests for stoker.http.ranges (RFC 9110 §14 Range, §13.1.5 If-Range)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.dates import format_http_date
from stoker.http.ranges import (
    FULL,
    UNSATISFIABLE,
    RangeDecision,
    decide_range,
    if_range_matches,
    parse_range,
)

ETAG = '"v1"'
LM = format_http_date(1_700_000_000)
LENGTH = 1000


def decide(range_header: str | bytes | None, if_range: str | None = None, *,
           etag: str | None = ETAG, last_modified: str | None = LM,
           length: int = LENGTH) -> RangeDecision:
    return decide_range(range_header, if_range, etag=etag, last_modified=last_modified,
                        length=length)


@pytest.mark.parametrize(
    ("header", "start", "size"),
    [
        ("bytes=0-99", 0, 100),
        ("bytes=0-0", 0, 1),
        ("bytes=999-999", 999, 1),
        ("bytes=100-", 100, 900),
        ("bytes=0-", 0, 1000),
        ("bytes=-50", 950, 50),
        ("bytes=-1000", 0, 1000),
        ("bytes=-5000", 0, 1000),  # suffix longer than the body: all of it (§14.1.1)
        ("bytes=900-5000", 900, 100),  # last-pos clipped
        ("bytes=900-99999999999999999999999", 900, 100),  # absurdly long last-pos
        ("BYTES=1-2", 1, 2),  # range units are case-insensitive (§14.1)
        ("bytes = 1-2", 1, 2),
        ("bytes= 1-2 ", 1, 2),
        ("bytes=1-2,", 1, 2),  # empty list members do not count (§5.6.1)
        (b"bytes=10-19", 10, 10),
    ],
)
def test_single_satisfiable_range_is_206(header: str | bytes, start: int, size: int) -> None:
    assert decide(header) == RangeDecision(206, start, size)


@pytest.mark.parametrize(
    "header", ["bytes=1000-", "bytes=1000-1001", "bytes=5000-6000", "bytes=-0",
               "bytes=99999999999999999999999-"]
)
def test_unsatisfiable_single_range_is_416(header: str) -> None:
    decision = decide(header)
    assert decision == UNSATISFIABLE
    assert decision.content_range(LENGTH) == b"bytes */1000"


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "bytes=",
        "bytes=,",
        "bytes",
        "items=0-1",  # unknown unit
        "bytes=a-b",
        "bytes=1-0",  # last-pos < first-pos makes the set invalid
        "bytes=-",
        "bytes=--1",
        "bytes=1--2",
        "bytes=+1-2",
        "bytes=1 -2",
        "bytes=0x1-2",
        "bytes=\u0661-\u0662",  # non-ASCII digits
        "bytes=0-1,5-6",  # multi-range: the full 200
        "bytes=0-1, -5",
        "bytes=0-1,1000-",
        "bytes=0-1, bytes=5-6",  # two Range lines joined
    ],
)
def test_ignored_range_is_full_200(header: str | None) -> None:
    assert decide(header) == FULL


def test_empty_representation_is_full_200() -> None:
    assert decide("bytes=0-10", length=0) == FULL
    assert decide("bytes=-10", length=0) == FULL


def test_content_range_of_206() -> None:
    assert decide("bytes=0-99").content_range(20000) == b"bytes 0-99/20000"
    assert decide("bytes=-50", length=20000).content_range(20000) == b"bytes 19950-19999/20000"


# --- RFC 9110 §13.1.5 If-Range -------------------------------------------
@pytest.mark.parametrize(
    ("if_range", "etag", "last_modified", "expected"),
    [
        ('"v1"', '"v1"', None, True),
        (' "v1" ', '"v1"', None, True),
        ('"v2"', '"v1"', None, False),
        ('W/"v1"', '"v1"', None, False),  # weak tags never match (strong comparison)
        ('"v1"', 'W/"v1"', None, False),
        ('"v1"', None, LM, False),
        ('"v1', '"v1', None, False),  # malformed
        (LM, None, LM, True),
        (LM, ETAG, LM, True),
        (format_http_date(1_700_000_001), None, LM, False),
        (LM, None, None, False),
        (LM, None, "garbage", False),
        ("garbage", ETAG, LM, False),
        ("", ETAG, LM, False),
        (None, ETAG, LM, False),
    ],
)
def test_if_range_matches(if_range: str | None, etag: str | None, last_modified: str | None,
                          expected: bool) -> None:
    assert if_range_matches(if_range, etag=etag, last_modified=last_modified) is expected


def test_if_range_decides_between_206_and_200() -> None:
    assert decide("bytes=0-9", '"v1"') == RangeDecision(206, 0, 10)
    assert decide("bytes=0-9", '"other"') == FULL
    assert decide("bytes=0-9", LM) == RangeDecision(206, 0, 10)
    assert decide("bytes=0-9", format_http_date(1)) == FULL
    # A failing If-Range also turns a would-be 416 into the full 200.
    assert decide("bytes=5000-", '"other"') == FULL
    # If-Range without Range changes nothing.
    assert decide(None, '"v1"') == FULL


def test_parse_range() -> None:
    assert parse_range("bytes=0-1, 5-, -3") == [(0, 1), (5, None), (None, 3)]
    assert parse_range("bytes=0-1, x") is None
    assert parse_range(None) is None


# --- Properties --------------------------------------------------------------
positions = st.integers(0, 3000)


@given(st.one_of(
    st.tuples(positions, st.one_of(st.none(), positions)).map(
        lambda p: f"bytes={p[0]}-{'' if p[1] is None else p[1]}"),
    positions.map(lambda n: f"bytes=-{n}"),
), st.integers(0, 2000))
def test_decision_invariants(header: str, length: int) -> None:
    decision = decide(header, length=length)
    specs = parse_range(header)
    if decision.status == 206:
        assert 0 <= decision.start < decision.start + decision.size <= length
        assert decision.size >= 1
    elif decision.status == 416:
        assert specs is not None and length > 0
        first, last = specs[0]
        assert (first is not None and first >= length) or (first is None and last == 0)
    else:
        assert decision == FULL
        assert specs is None or length == 0


@given(st.binary(max_size=60), st.integers(1, 100))
def test_206_slices_exactly_what_content_range_names(body: bytes, last: int) -> None:
    decision = decide(f"bytes=-{last}", length=len(body))
    if not body:
        assert decision == FULL
        return
    piece = body[decision.start:decision.start + decision.size]
    assert piece == body[-last:]
    first_pos, _, rest = decision.content_range(len(body)).decode()[6:].partition("-")
    last_pos, _, total = rest.partition("/")
    assert body[int(first_pos):int(last_pos) + 1] == piece and int(total) == len(body)


@given(st.text(max_size=40), st.one_of(st.none(), st.text(max_size=40)),
       st.integers(0, 10**6))
def test_never_raises(header: str, if_range: str | None, length: int) -> None:
    assert decide(header, if_range, length=length).status in (200, 206, 416)

"""Tests for stoker.http.freshness (RFC 9111 §4.2.1-§4.2.3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.dates import format_http_date
from stoker.http.freshness import (
    HEURISTICALLY_CACHEABLE,
    corrected_initial_age,
    expires_lifetime,
    heuristic_lifetime,
    parse_delta_seconds,
)

T = 1_700_000_000.0


def test_heuristically_cacheable_rfc9110_15_1() -> None:
    assert frozenset({200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501}) == (
        HEURISTICALLY_CACHEABLE
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", 0),
        ("42", 42),
        (b"42", 42),
        (" 42 ", 42),
        ("42, 7", 42),  # first member
        ("2147483649", 2147483648),  # RFC 9111 §1.2.2 cap
        ("9" * 40, 2147483648),
        ("-1", None),
        ("4.2", None),
        ("", None),
        ("abc", None),
        (None, None),
    ],
)
def test_parse_delta_seconds(value: str | bytes | None, expected: int | None) -> None:
    assert parse_delta_seconds(value) == expected


@pytest.mark.parametrize(
    ("age", "date", "request_time", "response_time", "expected"),
    [
        # RFC 9111 §4.2.3 worked through: no Age, Date == response time.
        (None, format_http_date(T), T, T, 0.0),
        # apparent_age = response_time - date_value = 10
        (None, format_http_date(T - 10), T, T, 10.0),
        # corrected_age_value = age + response_delay = 5 + 2 = 7 > apparent 0
        ("5", format_http_date(T), T - 2, T, 7.0),
        # apparent_age wins: 30 > 5 + 1
        ("5", format_http_date(T - 30), T - 1, T, 30.0),
        # Date in the future: apparent_age clamps at 0
        (None, format_http_date(T + 100), T, T, 0.0),
        # Missing / invalid Date: apparent_age 0 (Date taken as response_time)
        ("3", None, T, T, 3.0),
        ("3", "yesterday", T, T, 3.0),
        # Invalid Age → 0 (documented choice)
        ("abc", format_http_date(T), T - 1, T, 1.0),
        ("-5", format_http_date(T), T, T, 0.0),
        # request_time after response_time (clock step): delay clamps at 0
        (None, None, T + 5, T, 0.0),
        (b"20", format_http_date(T).encode(), T, T, 20.0),
    ],
)
def test_corrected_initial_age(
    age: str | bytes | None,
    date: str | bytes | None,
    request_time: float,
    response_time: float,
    expected: float,
) -> None:
    result = corrected_initial_age(
        age_header=age, date_header=date, request_time=request_time, response_time=response_time
    )
    assert result == pytest.approx(expected)


@given(
    age=st.one_of(st.none(), st.text(max_size=12), st.integers(0, 10**12).map(str)),
    date_offset=st.one_of(st.none(), st.integers(-(10**6), 10**6)),
    delay=st.floats(-100, 100),
)
def test_corrected_initial_age_never_negative(
    age: str | None, date_offset: int | None, delay: float
) -> None:
    date = None if date_offset is None else format_http_date(T + date_offset)
    result = corrected_initial_age(
        age_header=age, date_header=date, request_time=T - delay, response_time=T
    )
    assert result >= 0.0


@pytest.mark.parametrize(
    ("expires", "date", "expected"),
    [
        (None, None, None),
        (format_http_date(T + 60), format_http_date(T), 60.0),
        (format_http_date(T + 60), None, 60.0),  # Date missing → response_time
        (format_http_date(T + 60), format_http_date(T - 40), 100.0),  # relative to Date
        (format_http_date(T - 60), format_http_date(T), 0.0),  # in the past
        ("0", format_http_date(T), 0.0),  # RFC 9111 §5.3: invalid → expired
        ("", None, 0.0),
        ("Thu, 01 Dec 2026 16:00:00 UTC", None, 0.0),  # zone must be GMT
        ("Thu, 01 Dec 2026 16:00:00 +0000", None, 0.0),
        ("Thu, 01 Dec 2026 16:00:00 EST", None, 0.0),
        ("-1", None, 0.0),
        ("&&&", None, 0.0),
    ],
)
def test_expires_lifetime(expires: str | None, date: str | None, expected: float | None) -> None:
    values = [] if expires is None else [expires]
    assert expires_lifetime(expires_values=values, date_header=date, response_time=T) == expected


def test_expires_lines_that_disagree_mean_expired_rfc9111_4_2_1() -> None:
    later, sooner = format_http_date(T + 600), format_http_date(T + 60)
    assert expires_lifetime(expires_values=[later, sooner], date_header=None,
                            response_time=T) == 0.0
    assert expires_lifetime(expires_values=[later.encode(), later.encode()], date_header=None,
                            response_time=T) == 600.0


@pytest.mark.parametrize(
    ("last_modified", "date", "expected"),
    [
        (None, None, None),
        ("garbage", None, None),
        (format_http_date(T - 1000), None, 100.0),  # 10 % of 1000 s
        (format_http_date(T - 1000), format_http_date(T - 500), 50.0),  # from Date
        (format_http_date(T - 10**7), None, 86400.0),  # capped
        (format_http_date(T + 1000), None, 0.0),  # future Last-Modified
    ],
)
def test_heuristic_lifetime_rfc9111_4_2_2(
    last_modified: str | None, date: str | None, expected: float | None
) -> None:
    result = heuristic_lifetime(
        last_modified_header=last_modified,
        date_header=date,
        response_time=T,
        fraction=0.1,
        maximum=86400.0,
    )
    assert result == (None if expected is None else pytest.approx(expected))

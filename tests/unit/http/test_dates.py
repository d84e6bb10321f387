"""Tests for stoker.http.dates (RFC 9110 §5.6.7)."""

from __future__ import annotations

import calendar
import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.dates import format_http_date, parse_http_date

# 1994-11-06T08:49:37Z, the RFC's example instant.
EXAMPLE = 784111777.0


@pytest.mark.parametrize(
    "text",
    [
        "Sun, 06 Nov 1994 08:49:37 GMT",  # IMF-fixdate
        "Sunday, 06-Nov-94 08:49:37 GMT",  # obsolete RFC 850
        "Sun Nov  6 08:49:37 1994",  # obsolete asctime
        b"Sun, 06 Nov 1994 08:49:37 GMT",
        "  Sun, 06 Nov 1994 08:49:37 GMT  ",
        "sun, 06 nov 1994 08:49:37 gmt",  # lenient case
        "Sun Nov 06 08:49:37 1994",  # asctime with 2DIGIT day
    ],
)
def test_rfc9110_5_6_7_three_formats(text: str | bytes) -> None:
    assert parse_http_date(text) == EXAMPLE


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "0",
        "-1",
        "tomorrow",
        "Sun, 06 Nov 1994 08:49:37",  # no zone
        "Sun, 06 Nov 1994 08:49:37 PST",
        "Sun, 06 Nov 1994 08:49:37 UTC",  # RFC 9110 §5.6.7: the zone is GMT, only
        "Sun, 06 Nov 1994 08:49:37 +0000",
        "Sunday, 06-Nov-94 08:49:37 UTC",
        "Sun, 31 Feb 1994 08:49:37 GMT",  # no such day
        "Sun, 00 Nov 1994 08:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT",
        "Xyz, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:61 GMT",
        "Sun, 6 Nov 1994 08:49:37 GMT",  # IMF-fixdate day is 2DIGIT
        "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun, 06-Nov-94 08:49:37 GMT",  # RFC 850 needs the long day name
        "Sun, 06 Nov 1994 08:49:37 GMT garbage",
        "Sun, 06 Nov 0000 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT" + " " * 100,
        "Sun, \uff10\uff16 Nov 1994 08:49:37 GMT",  # non-ASCII (fullwidth) digits
    ],
)
def test_invalid_dates_are_none(text: str | None) -> None:
    assert parse_http_date(text) is None


def test_wrong_type_is_none() -> None:
    assert parse_http_date(12345) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "year"),
    [
        # Fixed pivot (no clock): 70-99 → 19xx, 00-69 → 20xx.
        ("Thursday, 01-Jan-70 00:00:00 GMT", 1970),
        ("Friday, 31-Dec-99 00:00:00 GMT", 1999),
        ("Saturday, 01-Jan-00 00:00:00 GMT", 2000),
        ("Monday, 01-Jan-69 00:00:00 GMT", 2069),
    ],
)
def test_rfc850_two_digit_year(text: str, year: int) -> None:
    parsed = parse_http_date(text)
    assert parsed is not None
    assert datetime.datetime.fromtimestamp(parsed, tz=datetime.UTC).year == year


def test_leap_second_counts_as_next_minute() -> None:
    assert parse_http_date("Sun, 06 Nov 1994 08:49:60 GMT") == EXAMPLE + 23


def test_weekday_not_checked() -> None:
    # Only the instant matters; a wrong weekday name is tolerated.
    assert parse_http_date("Mon, 06 Nov 1994 08:49:37 GMT") == EXAMPLE


@pytest.mark.parametrize(
    ("ts", "text"),
    [
        (EXAMPLE, "Sun, 06 Nov 1994 08:49:37 GMT"),
        (EXAMPLE + 0.999, "Sun, 06 Nov 1994 08:49:37 GMT"),  # fractions dropped
        (0.0, "Thu, 01 Jan 1970 00:00:00 GMT"),
        (-1.0, "Wed, 31 Dec 1969 23:59:59 GMT"),
        (951782400.0, "Tue, 29 Feb 2000 00:00:00 GMT"),
        (1e20, "Fri, 31 Dec 9999 23:59:59 GMT"),  # clamped
        (float("-inf"), "Mon, 01 Jan 0001 00:00:00 GMT"),
    ],
)
def test_format_http_date(ts: float, text: str) -> None:
    assert format_http_date(ts) == text


def test_format_nan_raises() -> None:
    with pytest.raises(ValueError):
        format_http_date(float("nan"))


MIN_TS = -62135596800  # 0001-01-01T00:00:00Z
MAX_TS = 253402300799  # 9999-12-31T23:59:59Z


@given(st.integers(min_value=MIN_TS, max_value=MAX_TS))
def test_round_trip_integer_timestamps(ts: int) -> None:
    text = format_http_date(float(ts))
    assert len(text) == 29
    assert parse_http_date(text) == ts
    assert parse_http_date(text.encode("ascii")) == ts


@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    result = parse_http_date(text)
    assert result is None or isinstance(result, float)


@given(st.binary())
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    parse_http_date(data)


@given(
    st.datetimes(min_value=datetime.datetime(1970, 1, 1), max_value=datetime.datetime(2069, 12, 31))
)
def test_three_formats_agree(moment: datetime.datetime) -> None:
    # RFC 9110 §5.6.7: all three forms name the same instant.
    moment = moment.replace(microsecond=0)
    imf = moment.strftime("%a, %d %b %Y %H:%M:%S GMT")
    rfc850 = moment.strftime("%A, %d-%b-%y %H:%M:%S GMT")
    asctime = moment.strftime("%a %b ") + f"{moment.day:>2}" + moment.strftime(" %H:%M:%S %Y")
    expected = calendar.timegm(moment.timetuple())
    assert parse_http_date(imf) == expected
    assert parse_http_date(rfc850) == expected
    assert parse_http_date(asctime) == expected

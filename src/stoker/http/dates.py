"""HTTP-date parsing and formatting (RFC 9110 §5.6.7).

Invariants:
- :func:`parse_http_date` never raises: anything that is not one of the three
  HTTP-date forms (IMF-fixdate, obsolete RFC 850, obsolete asctime) with a
  real calendar date, an in-range time of day and the zone ``GMT`` gives None
  (``UTC``, numeric offsets and other zone names are not HTTP-dates).
- :func:`format_http_date` always produces an IMF-fixdate, and for every
  integer timestamp in years 1..9999
  ``parse_http_date(format_http_date(ts)) == ts``.
- Pure: no clock reads.  The two-digit RFC 850 year therefore cannot use the
  "50 years in the future" rule of RFC 9110 §5.6.7 (it needs ``now``); we use
  the fixed POSIX pivot instead: 70-99 → 19xx, 00-69 → 20xx.
"""

from __future__ import annotations

import datetime
import math
import re

_DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")  # date.weekday() order
_LONG_DAY_NAMES = frozenset(
    {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
)
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH_NUMBER = {name.lower(): number for number, name in enumerate(_MONTHS, start=1)}
_SHORT_DAYS = frozenset(name.lower() for name in _DAY_NAMES)

_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
_MIN_TS = float((datetime.date(1, 1, 1).toordinal() - _EPOCH_ORDINAL) * 86400)
_MAX_TS = float((datetime.date(9999, 12, 31).toordinal() - _EPOCH_ORDINAL) * 86400 + 86399)

# Longest valid form is the RFC 850 one with "Wednesday": 37 characters.
_MAX_LENGTH = 64

# RFC 9110 §5.6.7.  Matching is case-insensitive (lenient: the grammar says
# case-sensitive, but real servers send "GMT" in odd cases and nothing is lost).
# The zone must be GMT: any other ("UTC", "+0000", "EST") makes the value not
# an HTTP-date, which for Expires means "already expired" (RFC 9111 §5.3).  We check the
# day name is a day name but not that it is the right one for the date:
# recipients only need the instant, and a wrong weekday is harmless.
# IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
_IMF_FIXDATE = re.compile(
    r"([a-z]{3}), (\d{2}) ([a-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) gmt",
    re.ASCII | re.IGNORECASE,
)
# rfc850-date: Sunday, 06-Nov-94 08:49:37 GMT
_RFC850_DATE = re.compile(
    r"([a-z]{6,9}), (\d{2})-([a-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) gmt",
    re.ASCII | re.IGNORECASE,
)
# asctime-date: Sun Nov  6 08:49:37 1994   (day is 2DIGIT or SP 1DIGIT)
_ASCTIME_DATE = re.compile(
    r"([a-z]{3}) ([a-z]{3}) ( \d|\d{2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})",
    re.ASCII | re.IGNORECASE,
)


def _timestamp(
    year: int, month_name: str, day: int, hour: int, minute: int, second: int
) -> float | None:
    month = _MONTH_NUMBER.get(month_name.lower())
    # RFC 9110 §5.6.7: hour 0-23, minute 0-59, second 0-60 (60 = leap second;
    # we count it as the first second of the next minute).
    if month is None or hour > 23 or minute > 59 or second > 60 or year < 1:
        return None
    try:
        ordinal = datetime.date(year, month, day).toordinal()
    except ValueError:  # e.g. 31 Feb, day 00
        return None
    return float((ordinal - _EPOCH_ORDINAL) * 86400 + hour * 3600 + minute * 60 + second)


def parse_http_date(value: str | bytes | None) -> float | None:
    """Epoch seconds for an HTTP-date, or None when ``value`` is not one."""
    if value is None:
        return None
    if isinstance(value, bytes):
        text = value.decode("latin-1")
    elif isinstance(value, str):
        text = value
    else:  # defensive: never raise on a wrong type either
        return None
    if len(text) > _MAX_LENGTH:
        return None
    text = text.strip(" \t")

    match = _IMF_FIXDATE.fullmatch(text)
    if match is not None:
        dayname, day, mon, year, hh, mm, ss = match.groups()
        if dayname.lower() not in _SHORT_DAYS:
            return None
        return _timestamp(int(year), mon, int(day), int(hh), int(mm), int(ss))

    match = _RFC850_DATE.fullmatch(text)
    if match is not None:
        dayname, day, mon, yy, hh, mm, ss = match.groups()
        if dayname.lower() not in _LONG_DAY_NAMES:
            return None
        two_digit = int(yy)
        year = 1900 + two_digit if two_digit >= 70 else 2000 + two_digit
        return _timestamp(year, mon, int(day), int(hh), int(mm), int(ss))

    match = _ASCTIME_DATE.fullmatch(text)
    if match is not None:
        dayname, mon, day, hh, mm, ss, year = match.groups()
        if dayname.lower() not in _SHORT_DAYS:
            return None
        return _timestamp(int(year), mon, int(day.strip()), int(hh), int(mm), int(ss))

    return None


def format_http_date(ts: float) -> str:
    """``ts`` as an IMF-fixdate, e.g. ``Sun, 06 Nov 1994 08:49:37 GMT``.

    Fractions of a second are dropped (rounded down).  Timestamps outside
    years 1..9999 are clamped to that range (IMF-fixdate has a 4-digit year).
    Raises ValueError for NaN, which names no instant.
    """
    if math.isnan(ts):
        raise ValueError("cannot format NaN as an HTTP date")
    clamped = min(max(ts, _MIN_TS), _MAX_TS)
    days, seconds = divmod(math.floor(clamped), 86400)
    date = datetime.date.fromordinal(_EPOCH_ORDINAL + days)
    hour, rest = divmod(seconds, 3600)
    minute, second = divmod(rest, 60)
    return (
        f"{_DAY_NAMES[date.weekday()]}, {date.day:02d} {_MONTHS[date.month - 1]} "
        f"{date.year:04d} {hour:02d}:{minute:02d}:{second:02d} GMT"
    )

"""Answering a byte ``Range`` request from a complete stored representation.

RFC 9110 §14 (range requests) and §13.1.5 (If-Range).

Invariants of :func:`decide_range`:
- Pure and total: no I/O, no clock, never raises on malformed input.
- ``status`` is 200 (ignore the Range and send everything), 206 or 416.
  200 when: there is no Range; it is not a syntactically valid
  ``bytes=`` range set (unknown units included; RFC 9110 §14.2 "MAY ignore");
  If-Range is present and does not match (§13.1.5); the set has more than
  one range (we do not send multipart/byteranges); or the representation
  is empty.
- 206 has ``0 <= start < start + size <= length`` and ``size >= 1``: the
  range clipped to the representation (§14.1.1).
- 416 only for a single range that is unsatisfiable: ``first-pos >= length``
  or a zero suffix-length (§14.1.1, §15.5.17).
- If-Range matches only a strong entity tag equal to a strong stored ETag
  (strong comparison, §8.8.3.2), or an HTTP-date equal to the stored
  Last-Modified; a weak or malformed value never matches.
- Positions longer than 18 digits are read as 10**18 (beyond any body), so
  absurd input cannot make big-integer work.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .dates import parse_http_date

_MAX_DIGITS = 18
_HUGE = 10**_MAX_DIGITS
_UNIT = re.compile(r"[ \t]*bytes[ \t]*=", re.ASCII | re.IGNORECASE)
_INT_RANGE = re.compile(r"(\d+)-(\d*)", re.ASCII)
_SUFFIX_RANGE = re.compile(r"-(\d+)", re.ASCII)


@dataclass(frozen=True, slots=True)
class RangeDecision:
    """How to answer: see the module invariants."""

    status: int
    start: int = 0
    size: int = 0

    def content_range(self, length: int) -> bytes:
        """The Content-Range value of a 206 or 416 (RFC 9110 §14.4)."""
        if self.status == 416:
            return f"bytes */{length}".encode()
        return f"bytes {self.start}-{self.start + self.size - 1}/{length}".encode()


FULL = RangeDecision(200)
UNSATISFIABLE = RangeDecision(416)

Spec = tuple[int | None, int | None]  # (first, last) or (None, suffix-length)


def _text(value: str | bytes | None) -> str | None:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value


def _number(digits: str) -> int:
    return _HUGE if len(digits) > _MAX_DIGITS else int(digits)


def parse_range(value: str | bytes | None) -> list[Spec] | None:
    """The specs of a ``bytes`` Range value (RFC 9110 §14.1.1), or None if invalid.

    Empty list members are skipped (RFC 9110 §5.6.1); a set with none left,
    a malformed member or ``last-pos < first-pos`` makes the whole value invalid.
    """
    text = _text(value)
    if text is None:
        return None
    unit = _UNIT.match(text)
    if unit is None:
        return None
    specs: list[Spec] = []
    for member in text[unit.end() :].split(","):
        member = member.strip(" \t")
        if not member:
            continue
        suffix = _SUFFIX_RANGE.fullmatch(member)
        if suffix is not None:
            specs.append((None, _number(suffix.group(1))))
            continue
        match = _INT_RANGE.fullmatch(member)
        if match is None:
            return None
        first = _number(match.group(1))
        last = _number(match.group(2)) if match.group(2) else None
        if last is not None and last < first:
            return None
        specs.append((first, last))
    return specs or None


def if_range_matches(
    if_range: str | bytes | None, *, etag: str | None, last_modified: str | None
) -> bool:
    """RFC 9110 §13.1.5: True when the If-Range validator matches the stored one."""
    text = _text(if_range)
    if text is None:
        return False
    text = text.strip(" \t")
    if text.startswith(('"', "W/")):
        return (
            etag is not None
            and _is_strong_tag(text)
            and _is_strong_tag(etag.strip(" \t"))
            and text == etag.strip(" \t")
        )
    wanted = parse_http_date(text)
    return wanted is not None and wanted == parse_http_date(last_modified)


def _is_strong_tag(tag: str) -> bool:
    return len(tag) >= 2 and tag[0] == '"' and tag[-1] == '"' and '"' not in tag[1:-1]


def decide_range(
    range_header: str | bytes | None,
    if_range: str | bytes | None,
    *,
    etag: str | None,
    last_modified: str | None,
    length: int,
) -> RangeDecision:
    """How to answer a GET with these Range / If-Range values.  See module invariants."""
    specs = parse_range(range_header)
    if specs is None or len(specs) != 1 or length <= 0:
        return FULL
    if if_range is not None and not if_range_matches(
        if_range, etag=etag, last_modified=last_modified
    ):
        return FULL
    first, last = specs[0]
    if first is None:  # suffix range: the last ``last`` bytes
        suffix = last or 0
        if suffix == 0:
            return UNSATISFIABLE
        start = max(0, length - suffix)
        return RangeDecision(206, start, length - start)
    if first >= length:
        return UNSATISFIABLE
    end = length - 1 if last is None else min(last, length - 1)
    return RangeDecision(206, first, end - first + 1)

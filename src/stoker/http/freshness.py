"""Age and freshness-lifetime arithmetic (RFC 9111 §4.2).

Invariants:
- Every function here is total and pure: no clock reads (times are passed in
  as float epoch seconds), no exceptions on malformed header values.
- Every age and lifetime returned is finite-or-capped and never negative.
- A malformed or missing ``Age`` counts as 0: RFC 9111 §5.1 gives no rule for
  an invalid Age, and 0 is what a cache assumes when the field is absent.
  Multiple Age values: the first is used (RFC 9111 §4.2.1 "first occurrence").
- A missing or invalid ``Date`` is replaced by ``response_time`` (RFC 9110
  §6.6.1: a recipient without a Date assumes the time it received the message).
"""

from __future__ import annotations

from collections.abc import Sequence

from .dates import parse_http_date

DELTA_SECONDS_CAP = 2147483648  # RFC 9111 §1.2.2

# RFC 9110 §15.1: status codes defined as heuristically cacheable.
HEURISTICALLY_CACHEABLE: frozenset[int] = frozenset(
    {200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501}
)

# RFC 9111 §5.2.2.3: status codes whose caching requirements this cache
# implements, for ``must-understand``: the heuristically cacheable ones plus
# the redirects it stores only with explicit freshness (RFC 9110 §15.4).
UNDERSTOOD_STATUSES: frozenset[int] = HEURISTICALLY_CACHEABLE | {302, 303, 307}


def _text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    return value.decode("latin-1") if isinstance(value, bytes) else value


def parse_delta_seconds(value: bytes | str | None) -> int | None:
    """RFC 9111 §1.2.2 delta-seconds (1*DIGIT), capped at 2**31; None if invalid.

    Only the first member of a comma-separated list is considered.
    """
    text = _text(value)
    if text is None:
        return None
    text = text.split(",", 1)[0].strip(" \t")
    if not text or not text.isascii() or not text.isdigit():
        return None
    if len(text) > 10:
        return DELTA_SECONDS_CAP
    return min(int(text), DELTA_SECONDS_CAP)


def date_value(date_header: bytes | str | None, response_time: float) -> float:
    """The response's Date, or ``response_time`` when missing or invalid (RFC 9110 §6.6.1)."""
    parsed = parse_http_date(date_header)
    return response_time if parsed is None else parsed


def corrected_initial_age(
    *,
    age_header: bytes | str | None,
    date_header: bytes | str | None,
    request_time: float,
    response_time: float,
) -> float:
    """RFC 9111 §4.2.3 ``corrected_initial_age``; never negative.

    apparent_age = max(0, response_time - date_value)
    response_delay = response_time - request_time   (clamped at 0: clocks may step)
    corrected_age_value = age_value + response_delay
    corrected_initial_age = max(apparent_age, corrected_age_value)
    """
    age_value = parse_delta_seconds(age_header) or 0
    apparent_age = max(0.0, response_time - date_value(date_header, response_time))
    response_delay = max(0.0, response_time - request_time)
    corrected_age_value = age_value + response_delay
    return max(0.0, apparent_age, corrected_age_value)


def expires_lifetime(
    *,
    expires_values: Sequence[bytes | str],
    date_header: bytes | str | None,
    response_time: float,
) -> float | None:
    """RFC 9111 §4.2.1 lifetime from ``Expires - Date``; None when Expires is absent.

    ``expires_values`` are all the Expires field lines.  An invalid Expires
    (e.g. ``0``, or a zone other than GMT) means "already expired" (RFC 9111
    §5.3), so it gives 0; so do lines that disagree (§4.2.1 allows taking
    such a response as stale).  Never negative.
    """
    if not expires_values:
        return None
    first = _text(expires_values[0])
    if any(_text(value) != first for value in expires_values[1:]):
        return 0.0
    expires = parse_http_date(first)
    if expires is None:
        return 0.0
    return max(0.0, expires - date_value(date_header, response_time))


def heuristic_lifetime(
    *,
    last_modified_header: bytes | str | None,
    date_header: bytes | str | None,
    response_time: float,
    fraction: float,
    maximum: float,
) -> float | None:
    """RFC 9111 §4.2.2 heuristic: ``fraction`` of the time since Last-Modified.

    None when Last-Modified is missing or invalid.  Capped at ``maximum`` and
    never negative (a Last-Modified in the future gives 0).
    """
    last_modified = parse_http_date(last_modified_header)
    if last_modified is None:
        return None
    since = date_value(date_header, response_time) - last_modified
    return max(0.0, min(maximum, fraction * since)) if since > 0 else 0.0

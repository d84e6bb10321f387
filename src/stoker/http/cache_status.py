"""The Cache-Status response field (RFC 9211).

Invariants:
- :func:`cache_status` returns one list member (RFC 9211 §2): the cache
  name followed by parameters in the fixed order ``hit``, ``fwd``,
  ``fwd-status``, ``stored``, ``collapsed``, ``ttl``, ``detail``, encoded
  as a Structured Field (RFC 8941) so it can be appended to an upstream
  Cache-Status with ``", "``.
- The output is always printable ASCII: names and details that are not
  valid sf-tokens become sf-strings (``\\`` and ``"`` escaped, other
  non-printable or non-ASCII characters replaced by ``?``).
- ``ttl`` is an sf-integer: rounded down, clamped to the RFC 8941 range
  (±999,999,999,999,999); NaN is omitted.
- Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
import re

from .structured_fields import Params, parse_list

# RFC 9211 §2.2: the fwd values.
FWD_VALUES: frozenset[str] = frozenset(
    {"bypass", "method", "uri-miss", "vary-miss", "miss", "request", "stale", "partial"}
)

_SF_INTEGER_MAX = 999_999_999_999_999  # RFC 8941 §3.3.1
# RFC 8941 §3.3.4: sf-token = ( ALPHA / "*" ) *( tchar / ":" / "/" )
_SF_TOKEN = re.compile(r"[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*")


def sf_bare_item(text: str) -> str:
    """``text`` as an sf-token when it is one, else as an sf-string."""
    if _SF_TOKEN.fullmatch(text):
        return text
    return sf_string(text)


def sf_string(text: str) -> str:
    """``text`` as an RFC 8941 §3.3.3 sf-string (printable ASCII only)."""
    chars = []
    for char in text:
        if char in '\\"':
            chars.append("\\" + char)
        elif " " <= char <= "~":
            chars.append(char)
        else:
            chars.append("?")
    return '"' + "".join(chars) + '"'


def cache_status(
    *,
    hit: bool,
    fwd: str | None = None,
    fwd_status: int | None = None,
    stored: bool = False,
    collapsed: bool = False,
    ttl: float | None = None,
    detail: str | None = None,
    name: str = "stoker",
) -> bytes:
    """One Cache-Status list member, e.g. ``b"stoker; hit; ttl=42"``."""
    assert fwd is None or fwd in FWD_VALUES, f"invalid Cache-Status fwd value {fwd!r}"
    parts = [sf_bare_item(name)]
    if hit:
        parts.append("hit")
    if fwd is not None:
        parts.append(f"fwd={fwd}")
    if fwd_status is not None:
        parts.append(f"fwd-status={int(fwd_status)}")
    if stored:
        parts.append("stored")
    if collapsed:
        parts.append("collapsed")
    if ttl is not None and not math.isnan(ttl):
        seconds = max(-_SF_INTEGER_MAX, min(_SF_INTEGER_MAX, ttl))
        parts.append(f"ttl={math.floor(seconds)}")
    if detail is not None:
        parts.append(f"detail={sf_bare_item(detail)}")
    return "; ".join(parts).encode("ascii")


def read_status(value: str) -> Params:
    """The parameters of the last member of a Cache-Status field value (``{"hit": True,
    "ttl": 60, "detail": "set-cookie"}``): reads back what :func:`cache_status` wrote
    (tokens compare equal to their text); ``{}`` when the value is not a List."""
    members = parse_list(value)
    return members[-1].params if members else {}

"""Whether a request's ``Accept`` takes a media type (RFC 9110 §12.5.1).

Invariants: no ``Accept`` field accepts everything; the most specific media range that
matches decides (``text/html`` over ``text/*`` over ``*/*``; among equally specific
ones, the lowest q: refusal is the safe side), and ``q=0`` refuses; a type no range
matches is not accepted; a malformed q-value counts as 0.  Pure.
"""

from __future__ import annotations

from stoker.http.encoding import q_value
from stoker.http.headers import HeaderInput, get_joined


def accepts(headers: HeaderInput, media_type: str) -> bool:
    """Whether a request with ``headers`` accepts ``media_type`` (``type/subtype``)."""
    accept = get_joined(headers, b"accept")
    if accept is None:
        return True
    kind = media_type.lower().partition("/")[0]
    ranges = {media_type.lower(): 3, f"{kind}/*": 2, "*/*": 1}
    best: tuple[int, float] | None = None  # (specificity, q) of the best match so far
    for member in accept.split(","):
        name, _, params = member.partition(";")
        specificity = ranges.get(name.strip().lower())
        if specificity is None:
            continue
        q = q_value(params)
        if best is None or specificity > best[0] or (specificity == best[0] and q < best[1]):
            best = (specificity, q)
    return best is not None and best[1] > 0

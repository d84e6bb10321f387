"""Cache tags from response headers (``Surrogate-Key``, ``Cache-Tag``).  Pure.

Invariant: tags are exact strings without whitespace or commas; the same tag
named twice is kept once, in first-seen order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_SEPARATORS = re.compile(r"[\s,]+")


def tags_from_headers(headers: Sequence[tuple[bytes, bytes]],
                      names: Sequence[bytes]) -> tuple[str, ...]:
    """Every tag named by the ``names`` fields (space- or comma-separated)."""
    seen: dict[str, None] = {}
    for name, value in headers:
        if name in names:
            for tag in _SEPARATORS.split(value.decode("latin-1")):
                if tag:
                    seen.setdefault(tag, None)
    return tuple(seen)

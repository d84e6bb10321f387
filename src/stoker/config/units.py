"""Parsers for human-written durations and sizes (``"90s"``, ``"5m"``, ``"256MiB"``), and
the inverse: :func:`format_duration` and :func:`format_size`.

Invariants: both parsers accept plain non-negative numbers as seconds/bytes and
raise ``ValueError`` with the offending text for anything else; the formatters give
the largest unit that states the value exactly, and each parser reads back exactly
what its formatter wrote.
"""

from __future__ import annotations

import re
from typing import Any

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")
_DURATION_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, None: 1}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_duration(value: Any) -> float:
    """Seconds from ``30``, ``1.5``, ``"500ms"``, ``"90s"``, ``"5m"``, ``"2h"``, ``"1d"``."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration such as 30, '90s', '5m' or '1h', got {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"a duration cannot be negative, got {value!r}")
        return float(value)
    match = _DURATION.match(str(value))
    if match is None:
        raise ValueError(f"expected a duration such as 30, '90s', '5m' or '1h', got {value!r}")
    return float(match.group(1)) * _DURATION_UNITS[match.group(2)]


def parse_size(value: Any) -> int:
    """Bytes from ``1048576``, ``"512KiB"``, ``"256MB"``, ``"4GiB"`` (binary multiples)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size such as 1048576, '512KiB' or '4GiB', got {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"a size cannot be negative, got {value!r}")
        return int(value)
    match = _SIZE.match(str(value))
    if match is None:
        raise ValueError(f"expected a size such as 1048576, '512KiB' or '4GiB', got {value!r}")
    unit = (match.group(2) or "").lower()[:1]
    return int(float(match.group(1)) * _SIZE_UNITS[unit])


def format_duration(seconds: float) -> str:
    """``seconds`` as ``"1d"``, ``"5m"``, ``"90s"`` or ``"1500ms"``: the largest exact unit."""
    for unit in ("d", "h", "m", "s"):
        count = seconds / _DURATION_UNITS[unit]
        if count == int(count) and (count or unit == "s"):
            return f"{int(count)}{unit}"
    milliseconds = seconds * 1000
    return f"{int(milliseconds)}ms" if milliseconds == int(milliseconds) else f"{seconds}"


def format_size(size: int) -> str:
    """``size`` bytes as ``"4GiB"``, ``"256KiB"`` or ``"1000"``: the largest exact unit."""
    for unit in ("t", "g", "m", "k"):
        if size and size % _SIZE_UNITS[unit] == 0:
            return f"{size // _SIZE_UNITS[unit]}{unit.upper()}iB"
    return str(size)

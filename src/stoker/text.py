"""Words for counts in texts people read (the CLI, the admin pages, run messages).

Invariant: :func:`plural` agrees the noun with the count (``1 URL``, ``2 URLs``,
``0 URLs``); the figure is written by the caller's formatter, so each text keeps its
own thousands separator.  Pure.
"""

from __future__ import annotations

from collections.abc import Callable


def plural(count: int, noun: str, many: str | None = None, *,
           figure: Callable[[int], str] = str) -> str:
    """``count`` (written by ``figure``) and ``noun``, or ``many`` (default ``noun + "s"``)
    unless ``count`` is 1: ``plural(1, "URL")`` is ``"1 URL"``, ``plural(3, "entry",
    "entries")`` is ``"3 entries"``.  Pure."""
    word = noun if count == 1 else (many or f"{noun}s")
    return f"{figure(count)} {word}"

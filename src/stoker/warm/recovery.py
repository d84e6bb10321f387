"""Warm work across an origin outage: which failures the origin's outage caused, what to
visit again once it answers, and how long to wait between tries.  Pure: no I/O, no clock.

Invariants:
- A failure counts as the origin's outage (:func:`origin_down`) exactly when the
  origin gave no answer or a ``5xx`` (``status 0``, ``status 5NN``: Stoker's own ``502``
  / ``503`` / ``504`` for an origin that does not answer included) or a stale copy stood
  in for it; a ``4xx`` (a page gone, forbidden) is the page's answer, not an outage.
- :func:`to_retry` keeps exactly those URLs, each once, in the order given.
- :func:`backoff` is ``first`` for the first try, doubling each further try, never
  above ``most``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from stoker.warm.visits import STALE_SERVED

RECENT: Final = 86_400.0
"""How far back (seconds, by the runs' start) the URLs that failed are looked for."""
_STATUS: Final = "status "


def down_status(status: int) -> bool:
    """Whether an answer with ``status`` says the origin is down (no answer is ``0``)."""
    return status == 0 or 500 <= status <= 599


def origin_down(detail: str | None) -> bool:
    """Whether a failed URL's ``detail`` (``status N`` or a stale copy served) says it
    failed because the origin was down."""
    if detail == STALE_SERVED:
        return True
    if detail is None or not detail.startswith(_STATUS):
        return False
    code = detail.removeprefix(_STATUS)
    return code.isdigit() and down_status(int(code))


def to_retry(failures: Iterable[tuple[str, str | None]]) -> list[str]:
    """The URLs of ``failures`` (``(url, detail)``) the origin's outage caused, once each,
    in their order."""
    return list(dict.fromkeys(url for url, detail in failures if origin_down(detail)))


def backoff(tries: int, first: float, most: float) -> float:
    """Seconds to wait after the ``tries``-th failed try (``tries`` >= 1)."""
    if tries < 1:
        raise ValueError(f"tries must be >= 1, got {tries}")
    return min(most, first * 2.0 ** min(tries - 1, 60))

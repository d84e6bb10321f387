"""The ``RunStore`` port: warm runs kept in the database, so ``stoker warm --wait``,
other processes and a restarted process see them. Implemented by the SQLite and
PostgreSQL backends; both pass tests/contract/test_run_store.py.

Invariants every implementation keeps:
- Each method is one transaction that reads the rows it needs, decides with the
  pure functions of :mod:`stoker.warm.run` and writes the result, serialised
  against every other write to the same run (so counts never lose an update).
- ``create`` is atomic with the supersede/merge decision: at most one run is
  active at any time, also across processes and nodes (a partial unique index
  backs this up).
- The URLs of a run are rows keyed by ``(run, url)``: ``record`` compares the
  visit number against the row's, so a visit delivered twice counts once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, NamedTuple, Protocol

from stoker.warm.run import (
    URL_STATES,
    Counts,
    Reason,
    Recorded,
    Result,
    Run,
    UrlState,
    UrlStateName,
    Visit,
)

Outcome = Literal["started", "merged", "superseded", "busy"]
MAX_RECENT: Final = 1000

RUN_COLUMNS: Final = (
    "id, reason, scope, phase, started_at, total, warmed, not_modified, failed,"
    " stopgap_pending, rewarmed, gave_up, skipped, finished_at, error,"
    " collect_owner, collect_claimed_at")
"""The run columns every backend selects, in the order :func:`run_from_row` reads."""


class Created(NamedTuple):
    """What ``create`` did: ``run`` is the run that does the work (the active one
    when ``busy``); ``visits`` are to be queued now; ``cancelled`` is the run a
    new full run superseded."""

    run: Run
    outcome: Outcome
    visits: list[Visit]
    cancelled: Run | None = None


class Collected(NamedTuple):
    """The collect step stored: the run (now warming, or done) and the visits to queue
    (URLs merged in meanwhile were handed out by ``create`` already)."""

    run: Run
    visits: list[Visit]


class RunStore(Protocol):
    """Stored warm runs (see the module invariants)."""

    async def create(self, reason: Reason, urls: Sequence[str] | None, now: float, *,
                     replace: bool = True) -> Created:
        """Start a run: of the whole site (``urls is None``) or of ``urls`` (non-empty).
        A targeted run merges into an active run (``merged``: settled URLs are queued
        again); a full run supersedes the active one (``superseded``; the URLs a
        superseded targeted run had not visited are carried over), unless it is a full
        run and ``replace`` is false (``busy``: nothing changes)."""

    async def get(self, run_id: int) -> Run | None:
        """The run ``run_id``, or ``None``."""

    async def recent(self, limit: int = 20) -> list[Run]:
        """The newest runs (``limit`` clamped to 1..``MAX_RECENT``), newest first."""

    async def active(self) -> Run | None:
        """The run collecting or warming, if any."""

    async def claim_collect(self, run_id: int, owner: str, now: float) -> bool:
        """Compare-and-set: ``owner`` now holds the collect of ``run_id`` (free, its
        own, or stalled for over ``COLLECT_STALL`` seconds)."""

    async def set_total(self, run_id: int, owner: str, urls: Sequence[str], now: float, *,
                        skipped: int = 0) -> Collected | None:
        """Store the collected ``urls`` and start warming; ``None`` (and no change)
        unless ``owner`` holds the collect claim of an active run."""

    async def record(self, run_id: int, url: str, visit: int, result: Result,
                     now: float) -> Recorded:
        """Count the ``result`` of visit ``visit`` of ``url``, once; finishes the run
        ``done`` when it settles the last open URL. Raises ``LookupError`` for an
        unknown run."""

    async def finish(self, run_id: int, phase: Literal["done", "failed"], now: float,
                     error: str | None = None) -> Run | None:
        """End an active run; ``None`` if it had already ended or does not exist."""

    async def cancel(self, run_id: int, now: float) -> Run | None:
        """Cancel an active run; ``None`` if it had already ended or does not exist."""

    async def urls(self, run_id: int, state: UrlStateName, limit: int = 100) -> list[str]:
        """Up to ``limit`` (clamped like ``recent``) URLs of the run in ``state``
        (e.g. ``failed``), sorted; ``ValueError`` for an unknown state."""

    async def aclose(self) -> None:
        """Release connections (idempotent)."""


def run_from_row(row: Sequence[Any]) -> Run:
    """A :class:`Run` from a row selected as :data:`RUN_COLUMNS` (a tuple or a record)."""
    values = list(row)
    counts = Counts(*values[5:13])
    return Run(values[0], values[1], values[2], values[3], values[4], counts, *values[13:])


def run_values(run: Run) -> tuple[Any, ...]:
    """The mutable columns of ``run`` in the order of the backends' UPDATE statements:
    phase, the counts, finished_at, error, collect_owner, collect_claimed_at, then id."""
    c = run.counts
    return (run.phase, c.total, c.warmed, c.not_modified, c.failed, c.stopgap_pending,
            c.rewarmed, c.gave_up, c.skipped, run.finished_at, run.error, run.collect_owner,
            run.collect_claimed_at, run.id)


def url_state_from_row(row: Sequence[Any]) -> tuple[str, UrlState]:
    """``(url, state)`` from a row ``(url, state, visit, revisits)``."""
    return row[0], UrlState(row[1], row[2], row[3])


def check_limit(limit: int) -> int:
    """``limit`` clamped to 1..``MAX_RECENT``."""
    return max(1, min(limit, MAX_RECENT))


def check_urls(urls: Sequence[str] | None) -> None:
    """A targeted run needs URLs; say so clearly."""
    if urls is not None and not urls:
        raise ValueError("a targeted warm run needs at least one URL (None means the whole site)")


def check_state(state: str) -> str:
    """``state`` if it is a URL state; else a ``ValueError`` listing them."""
    if state not in URL_STATES:
        raise ValueError(f"unknown warm URL state {state!r}; one of {', '.join(URL_STATES)}")
    return state

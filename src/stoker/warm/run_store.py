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
  visit number against the row's, so a visit delivered twice counts once; a row
  keeps its :class:`~stoker.warm.run.UrlState` whole, ``detail`` included.
- ``skipped_reasons`` gives back the reasons ``set_total`` stored (each with a count above
  0), which add up to ``counts.skipped``; a run that never collected has none.
- ``last_failures`` judges each URL by its newest row that is settled or in the active
  run (runs by id): a URL failed in one run and warmed, or waiting to be visited, in a
  later one is not listed (a recovery checked while the last recovery run is going finds
  nothing new); a URL left queued by a cancelled run does not hide its failure.
- ``not_stored_reasons`` tallies exactly the run's ``not_stored`` rows by their
  ``detail``, so its counts add up to ``counts.not_stored``; ``not_stored_urls``
  groups the same rows by the same key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
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

Outcome = Literal["started", "merged", "superseded", "busy", "joined"]
"""What asking for a run did; ``joined`` is the warmer's (a manual full run asked while
an automatic one goes is that run), never a store's."""
MAX_RECENT: Final = 1000
MAX_FAILURES: Final = 100_000

COUNT_COLUMNS: Final = tuple(field.name for field in dataclasses.fields(Counts))
"""The count columns, named and ordered as the fields of :class:`Counts`."""
RUN_UPDATE_COLUMNS: Final = ("phase", *COUNT_COLUMNS, "finished_at", "error",
                             "collect_owner", "collect_claimed_at")
"""The mutable run columns, in the order :func:`run_values` gives them (the id follows)."""
RUN_COLUMNS: Final = ", ".join(("id", "reason", "scope", "phase", "started_at", *COUNT_COLUMNS,
                                "finished_at", "error", "collect_owner", "collect_claimed_at"))
"""The run columns every backend selects, in the order :func:`run_from_row` reads."""
_COUNTS_END: Final = 5 + len(COUNT_COLUMNS)


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
                        skipped: Mapping[str, int] | None = None) -> Collected | None:
        """Store the collected ``urls`` and why discovery left others out (``skipped``:
        reason → how many; counts of 0 dropped, their sum is ``counts.skipped``) and start
        warming; ``None`` (and no change) unless ``owner`` holds the collect claim of an
        active run."""

    async def record(self, run_id: int, url: str, visit: int, result: Result,
                     now: float, *, detail: str | None = None) -> Recorded:
        """Count the ``result`` of visit ``visit`` of ``url``, once, keeping ``detail``
        (why it was not stored, what failed) on a ``not_stored`` or ``failed`` URL;
        finishes the run ``done`` when it settles the last open URL. Raises
        ``LookupError`` for an unknown run."""

    async def finish(self, run_id: int, phase: Literal["done", "failed"], now: float,
                     error: str | None = None) -> Run | None:
        """End an active run; ``None`` if it had already ended or does not exist."""

    async def cancel(self, run_id: int, now: float) -> Run | None:
        """Cancel an active run; ``None`` if it had already ended or does not exist."""

    async def collect_failed(self, run_id: int, owner: str, error: str) -> Run | None:
        """Note that ``owner``'s discovery of ``run_id`` failed (``error``) and release its
        claim; the run stays collecting.  ``None`` (no change) unless ``owner`` holds the
        collect claim of an active run."""

    async def last_failures(self, since: float, limit: int = MAX_FAILURES
                            ) -> list[tuple[str, str | None]]:
        """``(url, detail)`` of up to ``limit`` URLs whose last state, in the runs started
        at or after ``since`` (settled, or queued in the active run), is ``failed``: newest
        run first, then by URL."""

    async def urls(self, run_id: int, state: UrlStateName, limit: int = 100) -> list[str]:
        """Up to ``limit`` (clamped like ``recent``) URLs of the run in ``state``
        (e.g. ``failed``), sorted; ``ValueError`` for an unknown state."""

    async def skipped_reasons(self, run_id: int) -> dict[str, int]:
        """Why discovery left URLs out of the run: each reason with its count, most first
        (then by reason); empty for an unknown run or one that never collected."""

    async def not_stored_reasons(self, run_id: int) -> dict[str, int]:
        """Why the run's ``not_stored`` URLs were not stored: each reason (their
        ``detail``; ``""`` when none was given) with how many URLs, most first (then by
        reason); empty for an unknown run."""

    async def not_stored_urls(self, run_id: int, each: int = 5) -> dict[str, list[str]]:
        """Up to ``each`` of the run's ``not_stored`` URLs (sorted) for each reason of
        :meth:`not_stored_reasons` (the same keys); empty for an unknown run."""

    async def aclose(self) -> None:
        """Release connections (idempotent)."""


def run_from_row(row: Sequence[Any]) -> Run:
    """A :class:`Run` from a row selected as :data:`RUN_COLUMNS` (a tuple or a record)."""
    values = list(row)
    counts = Counts(*values[5:_COUNTS_END])
    return Run(values[0], values[1], values[2], values[3], values[4], counts,
               *values[_COUNTS_END:])


def run_values(run: Run) -> tuple[Any, ...]:
    """The values of :data:`RUN_UPDATE_COLUMNS` for ``run``, then its id."""
    counts = (getattr(run.counts, column) for column in COUNT_COLUMNS)
    return (run.phase, *counts, run.finished_at, run.error, run.collect_owner,
            run.collect_claimed_at, run.id)


def update_statement(mark: Callable[[int], str]) -> str:
    """``UPDATE warm_runs`` of :data:`RUN_UPDATE_COLUMNS` by id, taking :func:`run_values`;
    ``mark(n)`` is the backend's marker of the ``n``-th parameter (from 1)."""
    sets = ", ".join(f"{column} = {mark(n)}" for n, column in enumerate(RUN_UPDATE_COLUMNS, 1))
    return f"UPDATE warm_runs SET {sets} WHERE id = {mark(len(RUN_UPDATE_COLUMNS) + 1)}"


def url_state_from_row(row: Sequence[Any]) -> tuple[str, UrlState]:
    """``(url, state)`` from a row ``(url, state, visit, revisits, detail)``."""
    return row[0], UrlState(row[1], row[2], row[3], row[4])


def grouped(rows: Iterable[Sequence[str]]) -> dict[str, list[str]]:
    """``{key: [value, ...]}`` from ``(key, value)`` rows, in their order.  Pure."""
    groups: dict[str, list[str]] = {}
    for key, value in rows:
        groups.setdefault(key, []).append(value)
    return groups


def not_stored_text(count: int, reasons: Mapping[str, int]) -> str:
    """``"3 not stored (set-cookie: 2, private: 1)"``: ``count`` and the ``reasons``
    (as :meth:`RunStore.not_stored_reasons` gives them, in their order)."""
    listed = ", ".join(f"{reason}: {n}" for reason, n in reasons.items())
    return f"{count} not stored" + (f" ({listed})" if listed else "")


def skipped_rows(skipped: Mapping[str, int] | None) -> list[tuple[str, int]]:
    """``(reason, count)`` of ``skipped`` whose count is above 0, by reason; ``ValueError``
    for a negative count.  Pure."""
    rows = sorted((skipped or {}).items())
    for reason, count in rows:
        if count < 0:
            raise ValueError(f"skipped[{reason!r}]: a count cannot be negative ({count})")
    return [(reason, count) for reason, count in rows if count]


def most_first(reasons: Mapping[str, int]) -> dict[str, int]:
    """``reasons`` whose count is above 0, most first, then by reason (as
    :meth:`RunStore.skipped_reasons` gives them).  Pure."""
    return dict(sorted(((reason, n) for reason, n in reasons.items() if n),
                       key=lambda item: (-item[1], item[0])))


def skipped_text(count: int, reasons: Mapping[str, int]) -> str:
    """``"54 skipped (other_host: 50, feed: 4)"``, as :func:`not_stored_text`."""
    listed = ", ".join(f"{reason}: {n}" for reason, n in reasons.items())
    return f"{count} skipped" + (f" ({listed})" if listed else "")


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

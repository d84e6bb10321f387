"""Warm runs as a pure state machine: no I/O, ``now`` always passed in.

A run (id = generation, increasing) warms either the whole site (``scope="site"``:
``collect`` the URLs, then ``warm`` them) or an explicit URL list (``scope="urls"``:
straight to ``warm``). It ends ``done``, ``failed`` or ``cancelled``. Every URL of a
run has a :class:`UrlState`; a worker's visit of a URL is recorded with the visit
number it was handed (:class:`Visit`).

Invariants (tests/unit/warm/test_run.py checks them, with hypothesis):
- The counts tally the URL states: each URL is in exactly one state, ``queued``
  (not yet visited), ``stopgap`` (a revisit pending; ``stopgap_pending``) or one of
  the settled states ``warmed``, ``not_modified``, ``not_stored`` (the cache does not
  store the page: revisiting cannot warm it), ``failed``, ``rewarmed``, ``gave_up``;
  so no count exceeds ``total`` and ``settled + stopgap_pending <= total``.
  ``skipped`` (URLs discovery left out) is outside ``total``.
- A URL's ``detail`` is set only in the states of :data:`DETAILED_STATES`
  (``not_stored``: why it was not stored; ``failed``: what failed), from the visit
  that settled it; queueing a URL again clears it.
- A visit is counted only when its number is the URL's current one, and counting
  moves the number on: a visit delivered twice (a job rerun after a lost lease)
  counts once, and a stale visit never overrides a newer one.
- A stopgap answer is revisited ``RevisitPolicy.delay`` later, at most
  ``max_rounds`` more times, with at most ``max_pending`` URLs pending per run;
  then the URL settles as ``rewarmed`` (or ``failed``, ``not_stored``) or ``gave_up``.
- A run is ``done`` exactly when it is past collect and every URL is settled:
  each transition that can complete a run finishes it in the same step.
- A finished run (``done``, ``failed``, ``cancelled``) never changes: every
  transition on it returns ``None`` or leaves it as it is.
- A run whose discovery failed stays ``collect`` with its ``error`` saying so
  (:func:`collect_failed`) until a retry collects it (the error cleared) or a newer
  full run supersedes it.
- At most one run is active (``collect`` or ``warm``): :func:`plan_create` makes a
  new full run supersede the active one and a targeted run merge into it.
- A URL merged into a run (:func:`merge`: a purge made its copy stale) gets a visit now:
  a settled one is queued again, an open one (queued far down a full run, or a stopgap
  waiting for its revisit) gets a new visit number, handed out with the merged ones at
  the front, and the visit it was waiting for no longer counts.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple, get_args

from stoker.text import plural

Reason = Literal["manual", "purge", "edit", "deploy", "daily", "recovery"]
Scope = Literal["site", "urls"]
Phase = Literal["collect", "warm", "done", "failed", "cancelled"]
Result = Literal["warmed", "not_modified", "not_stored", "failed", "stopgap"]
UrlStateName = Literal["queued", "stopgap", "warmed", "not_modified", "not_stored", "failed",
                       "rewarmed", "gave_up"]
Plan = Literal["start", "merge", "supersede", "busy"]

REASONS: Final[tuple[Reason, ...]] = get_args(Reason)
PHASES: Final[tuple[Phase, ...]] = get_args(Phase)
RESULTS: Final[tuple[Result, ...]] = get_args(Result)
URL_STATES: Final[tuple[UrlStateName, ...]] = get_args(UrlStateName)
ACTIVE_PHASES: Final[tuple[Phase, ...]] = ("collect", "warm")
OPEN_STATES: Final[tuple[UrlStateName, ...]] = ("queued", "stopgap")
DETAILED_STATES: Final[tuple[UrlStateName, ...]] = ("not_stored", "failed")
"""The states whose URLs keep the ``detail`` their settling visit gave."""
COLLECT_STALL: Final = 120.0
"""Seconds after which another worker may take over a collect that was claimed."""

# The count each URL state is tallied in (``queued`` is ``total`` minus the rest).
_TALLY: Final[dict[UrlStateName, str]] = {
    "stopgap": "stopgap_pending", "warmed": "warmed", "not_modified": "not_modified",
    "not_stored": "not_stored", "failed": "failed", "rewarmed": "rewarmed",
    "gave_up": "gave_up",
}


@dataclass(frozen=True)
class RevisitPolicy:
    """How stopgap pages are revisited (the issue's defaults)."""

    delay: float = 20.0
    max_rounds: int = 2
    max_pending: int = 200


DEFAULT_POLICY: Final = RevisitPolicy()

@dataclass(frozen=True)
class Counts:
    """A run's tallies; see the module invariants."""

    total: int = 0
    warmed: int = 0
    not_modified: int = 0
    not_stored: int = 0
    failed: int = 0
    stopgap_pending: int = 0
    rewarmed: int = 0
    gave_up: int = 0
    skipped: int = 0

    @property
    def settled(self) -> int:
        """URLs whose outcome is final."""
        return (self.warmed + self.not_modified + self.not_stored + self.failed
                + self.rewarmed + self.gave_up)

    @property
    def open(self) -> int:
        """URLs still to visit or revisit."""
        return self.total - self.settled

    def moved(self, old: UrlStateName | None, new: UrlStateName) -> Counts:
        """The counts after one URL went from ``old`` (``None``: a new URL) to ``new``."""
        return self.moved_many({old: 1}, new)

    def moved_many(self, olds: Mapping[UrlStateName | None, int],
                   new: UrlStateName) -> Counts:
        """The counts after ``olds[old]`` URLs each went from ``old`` (``None``: new URLs)
        to ``new``: one copy however many URLs moved."""
        changes: dict[str, int] = {}
        for old, count in olds.items():
            if old is None:
                changes["total"] = changes.get("total", self.total) + count
            elif old in _TALLY:
                field = _TALLY[old]
                changes[field] = changes.get(field, getattr(self, field)) - count
            if new in _TALLY:
                field = _TALLY[new]
                changes[field] = changes.get(field, getattr(self, field)) + count
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Run:
    """One warm run (see the module docstring)."""

    id: int
    reason: Reason
    scope: Scope
    phase: Phase
    started_at: float
    counts: Counts = Counts()
    finished_at: float | None = None
    error: str | None = None
    collect_owner: str | None = None
    collect_claimed_at: float | None = None

    @property
    def active(self) -> bool:
        """Collecting or warming."""
        return self.phase in ACTIVE_PHASES


@dataclass(frozen=True)
class UrlState:
    """Where one URL of a run stands: its state, the number its next visit must
    carry, how many stopgap revisits it has had, and (in :data:`DETAILED_STATES`) why
    it was not stored or what failed."""

    state: UrlStateName = "queued"
    visit: int = 0
    revisits: int = 0
    detail: str | None = None


class Visit(NamedTuple):
    """A visit to hand to a worker: record its result with this ``visit`` number."""

    url: str
    visit: int


class Added(NamedTuple):
    """URLs added to a run: the run after, the URL states to write, the visits to queue."""

    run: Run
    changes: dict[str, UrlState]
    visits: list[Visit]


class Recorded(NamedTuple):
    """One visit's result applied: ``counted`` is false for a duplicate or stale
    visit (nothing changed); ``revisit`` is set when a stopgap revisit is due at
    ``revisit_at``."""

    run: Run
    url: UrlState | None
    counted: bool
    revisit: Visit | None = None
    revisit_at: float | None = None


def new_run(run_id: int, reason: Reason, scope: Scope, now: float) -> Run:
    """A fresh run: a full run starts collecting, a targeted one starts warming."""
    if reason not in REASONS:
        raise ValueError(f"unknown warm run reason {reason!r}; one of {', '.join(REASONS)}")
    return Run(run_id, reason, scope, "collect" if scope == "site" else "warm", now)


def plan_create(active: Run | None, scope: Scope, *, replace: bool) -> Plan:
    """What a new run of ``scope`` does given the ``active`` one: start afresh, merge
    its URLs into it (targeted), supersede it (full), or nothing (``busy``: a full
    run is going and ``replace`` is false)."""
    if active is None or not active.active:
        return "start"
    if scope == "urls":
        return "merge"
    if active.scope == "site" and not replace:
        return "busy"
    return "supersede"


def all_settled(run: Run) -> bool:
    """Past collect with every URL recorded and no revisit pending."""
    return run.phase != "collect" and run.counts.open == 0


def settle(run: Run, now: float) -> Run:
    """``run`` finished as ``done`` if it is warming and nothing is open."""
    if run.phase == "warm" and all_settled(run):
        return dataclasses.replace(run, phase="done", finished_at=now)
    return run


def add_urls(run: Run, existing: Mapping[str, UrlState], urls: Iterable[str], now: float,
             *, reopen: bool) -> Added:
    """Add ``urls`` (first occurrence wins) to an active run. ``existing`` holds the
    states of those already in it; with ``reopen`` a settled one is queued again
    (a purge made its copy stale; its visit number already moved on when it was
    counted) and an open one gets the next visit number (its pending visit, wherever
    it stands in the queue, no longer counts), else it is left."""
    if not run.active:
        return Added(run, {}, [])
    moves: Counter[UrlStateName | None] = Counter()
    changes, visits = {}, []
    for url in dict.fromkeys(urls):
        old = existing.get(url)
        if old is None:
            new = UrlState()
        elif reopen and old.state in OPEN_STATES:  # its visit may be far down the queue
            new = UrlState("queued", old.visit + 1, old.revisits)
        elif reopen:
            new = UrlState("queued", old.visit)
        else:
            continue
        moves[None if old is None else old.state] += 1
        changes[url] = new
        visits.append(Visit(url, new.visit))
    counts = run.counts.moved_many(moves, "queued")
    return Added(settle(dataclasses.replace(run, counts=counts), now), changes, visits)


def merge(running: Run, existing: Mapping[str, UrlState], urls: Iterable[str],
          now: float) -> Added:
    """A targeted run's ``urls`` merged into the ``running`` run: each gets a visit now
    (settled ones reopened, open ones a new visit number)."""
    return add_urls(running, existing, urls, now, reopen=True)


def supersede(running: Run, new: Run, now: float) -> Run:
    """The ``running`` run cancelled because the full run ``new`` replaces it."""
    return cancel(running, now, f"superseded by run {new.id}") or running


def claim_collect(run: Run, owner: str, now: float, stall: float = COLLECT_STALL) -> Run | None:
    """``run`` with its collect claimed by ``owner``, or ``None`` when it is not
    collecting or another owner claimed it less than ``stall`` seconds ago. The
    owner claiming again renews its claim."""
    if run.phase != "collect":
        return None
    held = run.collect_claimed_at is not None and now - run.collect_claimed_at <= stall
    if held and run.collect_owner != owner:
        return None
    return dataclasses.replace(run, collect_owner=owner, collect_claimed_at=now)


def collect_failed(run: Run, owner: str, error: str) -> Run | None:
    """``run`` still collecting after ``owner``'s discovery failed: ``error`` says so (and
    when it is tried again), the claim is released for the retry, whoever takes it.
    ``None`` unless ``owner`` holds the collect claim."""
    if run.phase != "collect" or run.collect_owner != owner:
        return None
    return dataclasses.replace(run, error=error, collect_owner=None, collect_claimed_at=None)


def collected(run: Run, owner: str, existing: Mapping[str, UrlState], urls: Iterable[str],
              skipped: int, now: float) -> Added | None:
    """The collect step's result: ``urls`` added (those merged meanwhile kept as
    they are), ``skipped`` noted, the run warming (or done if nothing is open).
    ``None`` unless ``owner`` holds the collect claim."""
    if run.phase != "collect" or run.collect_owner != owner:
        return None
    if skipped < 0:
        raise ValueError(f"skipped must be >= 0, got {skipped}")
    warming = dataclasses.replace(
        run, phase="warm", counts=dataclasses.replace(run.counts, skipped=skipped), error=None)
    return add_urls(warming, existing, urls, now, reopen=False)


def record(run: Run, url: str, state: UrlState | None, visit: int, result: Result,
           now: float, policy: RevisitPolicy = DEFAULT_POLICY, *,
           detail: str | None = None) -> Recorded:
    """Apply the ``result`` of visit number ``visit`` of ``url`` (whose state is
    ``state``; ``None`` when the run does not hold it), ``detail`` saying why it was
    not stored or what failed. See the module invariants."""
    if result not in RESULTS:
        raise ValueError(f"unknown warm result {result!r}; one of {', '.join(RESULTS)}")
    if not run.active or state is None or state.state not in OPEN_STATES \
            or visit != state.visit:
        return Recorded(run, state, counted=False)
    new = _next_state(run.counts, state, result, policy)
    if new.state in DETAILED_STATES:
        new = dataclasses.replace(new, detail=detail)
    after = settle(dataclasses.replace(run, counts=run.counts.moved(state.state, new.state)), now)
    if new.state != "stopgap":
        return Recorded(after, new, counted=True)
    return Recorded(after, new, True, Visit(url, new.visit), now + policy.delay)


def _next_state(counts: Counts, state: UrlState, result: Result,
                policy: RevisitPolicy) -> UrlState:
    visit = state.visit + 1
    if state.state == "queued":
        if result != "stopgap":
            return UrlState(result, visit)
        room = policy.max_rounds > 0 and counts.stopgap_pending < policy.max_pending
        return UrlState("stopgap" if room else "gave_up", visit)
    revisits = state.revisits + 1
    if result == "stopgap":
        return UrlState("stopgap" if revisits < policy.max_rounds else "gave_up", visit, revisits)
    settled: UrlStateName = result if result in ("failed", "not_stored") else "rewarmed"
    return UrlState(settled, visit, revisits)


def finish(run: Run, phase: Phase, now: float, error: str | None = None) -> Run | None:
    """``run`` ended as ``done`` or ``failed`` (``None`` if it had already ended).
    ``done`` needs every URL settled: a run is done exactly when that holds."""
    if phase not in ("done", "failed"):
        raise ValueError(f"a warm run finishes as 'done' or 'failed', not {phase!r}")
    if not run.active:
        return None
    if phase == "done" and not all_settled(run):
        raise ValueError(
            f"warm run {run.id} cannot be done: {plural(run.counts.open, 'URL')} still open")
    return dataclasses.replace(run, phase=phase, finished_at=now, error=error)


def cancel(run: Run, now: float, error: str = "cancelled") -> Run | None:
    """``run`` cancelled (``None`` if it had already ended)."""
    if not run.active:
        return None
    return dataclasses.replace(run, phase="cancelled", finished_at=now, error=error)

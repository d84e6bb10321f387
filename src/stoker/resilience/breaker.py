"""Circuit breaker for the worker: stop leasing while a dependency keeps failing.

A pure state machine over an immutable ``BreakerState``; the worker feeds it
results and asks it before leasing. No I/O, no clock reads.

Transitions:
- ``closed``: a success resets the failure streak; the ``threshold``-th
  consecutive failure opens the breaker at ``now``.
- ``open``: no leasing until ``opened_at + cooldown``; results of jobs that
  were already running are ignored (they say nothing new).
- after the cooldown, ``on_probe`` moves to ``half_open`` with one probe job
  (``probe``) in flight; leasing stops again until that probe reports.
- ``half_open``: the probe's success closes the breaker; its failure reopens
  it at ``now``; a probe that ends without a verdict (``on_abandoned``: its
  lease was lost, it was cancelled or released) sends the breaker back to
  ``open`` with the old ``opened_at``, so the next probe may be leased at once.
  Results of other jobs are ignored: only the probe decides.

Invariant: every way out of ``half_open`` goes through the probe, so a worker
that reports each of its jobs' endings (result or abandonment) never stays
``half_open`` once its probe has ended.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

Phase: TypeAlias = Literal["closed", "open", "half_open"]


@dataclass(frozen=True, slots=True)
class BreakerState:
    """Breaker settings plus where it stands."""

    threshold: int = 5
    cooldown: float = 30.0
    phase: Phase = "closed"
    failures: int = 0
    opened_at: float = 0.0
    probe: int | None = None

    def __post_init__(self) -> None:
        if self.threshold < 1:
            raise ValueError(f"breaker threshold must be at least 1, got {self.threshold}")
        if self.cooldown < 0:
            raise ValueError(f"breaker cooldown must not be negative, got {self.cooldown}")


def on_result(state: BreakerState, job_id: int, ok: bool, now: float) -> BreakerState:
    """The breaker after job ``job_id`` finished (``ok``) or failed at ``now``."""
    if state.phase == "open":
        return state
    if state.phase == "half_open":
        if job_id != state.probe:
            return state
        return _closed(state) if ok else _opened(state, now)
    if ok:
        return _closed(state)
    failures = state.failures + 1
    if failures >= state.threshold:
        return _opened(replace(state, failures=failures), now)
    return replace(state, failures=failures)


def on_abandoned(state: BreakerState, job_id: int) -> BreakerState:
    """The breaker after job ``job_id`` ended without a result (lease lost, cancelled, released).

    Only the probe's abandonment matters: the breaker goes back to ``open``
    with its old ``opened_at`` (the cooldown has passed), ready for a new probe.
    """
    if state.phase == "half_open" and job_id == state.probe:
        return replace(state, phase="open", probe=None)
    return state


def may_lease(state: BreakerState, now: float) -> bool:
    """Whether the worker may lease now (in ``open`` after the cooldown: one probe)."""
    if state.phase == "closed":
        return True
    if state.phase == "open":
        return now >= state.opened_at + state.cooldown
    return False


def on_probe(state: BreakerState, now: float, job_id: int) -> BreakerState:
    """The breaker once the worker leased job ``job_id`` while not closed: the probe."""
    if state.phase == "open" and may_lease(state, now):
        return replace(state, phase="half_open", probe=job_id)
    return state


def lease_limit(state: BreakerState, wanted: int) -> int:
    """How many jobs to lease: all ``wanted`` when closed, one probe otherwise."""
    return wanted if state.phase == "closed" else min(wanted, 1)


def seconds_until_probe(state: BreakerState, now: float) -> float:
    """How long an open breaker still blocks leasing (0 when it does not)."""
    if state.phase != "open":
        return 0.0
    return max(0.0, state.opened_at + state.cooldown - now)


def seconds_until_retry(state: BreakerState, now: float) -> float:
    """How long a request turned away by a breaker that is not closed should wait before
    trying again: until the probe is due (``open``), or a whole cooldown (``half_open``:
    should the probe in flight fail, the next one is due a cooldown after it); 0 when
    closed."""
    if state.phase == "half_open":
        return state.cooldown
    return seconds_until_probe(state, now)


def _closed(state: BreakerState) -> BreakerState:
    return replace(state, phase="closed", failures=0, probe=None)


def _opened(state: BreakerState, now: float) -> BreakerState:
    return replace(state, phase="open", opened_at=now, probe=None)

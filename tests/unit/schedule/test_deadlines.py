"""Pure deadline decisions: arming modes, failure retries, due, wake times, row transitions."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.schedule.deadlines import (
    DUE_SLACK,
    Armed,
    arm_debounced,
    arm_earliest,
    armed,
    claimed,
    completed,
    due,
    failed,
    next_wake,
    replace_on_failure,
    wake_at,
)
from stoker.schedule.store import MAX_ERROR_CHARS, Deadline

T = 1_000.0


@pytest.mark.parametrize(
    ("current", "now", "delay", "expected"),
    [
        (None, T, 60, T + 60),  # nothing pending: now + delay
        (T + 60, T + 10, 60, T + 60),  # a later arm of the burst keeps the first's time
        (T + 60, T + 59, 60, T + 60),
        (T + 300, T, 60, T + 60),  # a shorter delay pulls it in
        (T - 5, T, 60, T - 5),  # overdue stays overdue
        (None, T, 0, T),
    ],
)
def test_arm_earliest(current: float | None, now: float, delay: float, expected: float) -> None:
    assert arm_earliest(current, now, delay) == expected


@pytest.mark.parametrize(
    ("state", "now", "expected"),
    [
        (None, T, Armed(T + 60, T)),  # first arm of a burst
        (Armed(T + 60, T), T + 30, Armed(T + 90, T)),  # each arm pushes it out...
        (Armed(T + 90, T), T + 200, Armed(T + 260, T)),
        (Armed(T + 260, T), T + 250, Armed(T + 300, T)),  # ...but never past first + max_wait
        (Armed(T + 300, T), T + 299, Armed(T + 300, T)),
        (Armed(T + 300, T), T + 400, Armed(T + 300, T)),  # overdue: fires at once
    ],
)
def test_arm_debounced_delay_60_max_wait_300(state: Armed | None, now: float,
                                             expected: Armed) -> None:
    assert arm_debounced(state, now, 60, 300) == expected


def test_debounce_with_max_wait_below_delay_fires_at_max_wait() -> None:
    assert arm_debounced(None, T, 60, 10) == Armed(T + 10, T)


@given(st.lists(st.floats(min_value=0, max_value=10_000), min_size=1, max_size=50),
       st.floats(min_value=0, max_value=1_000), st.floats(min_value=0, max_value=1_000))
def test_a_burst_fires_within_its_bounds(gaps: list[float], delay: float,
                                         max_wait: float) -> None:
    times, now = [], T
    for gap in gaps:
        now += gap
        times.append(now)
    earliest: float | None = None
    debounced: Armed | None = None
    for now in times:
        earliest = arm_earliest(earliest, now, delay)
        debounced = arm_debounced(debounced, now, delay, max_wait)
    assert earliest == times[0] + delay
    assert debounced is not None
    assert debounced.due_at == min(times[-1] + delay, times[0] + max_wait)
    assert debounced.due_at <= times[0] + max_wait


def test_replace_on_failure_starts_a_new_burst_at_the_retry() -> None:
    assert replace_on_failure(T, 600) == Armed(T + 600, T)


# --- row transitions ----------------------------------------------------------------

def row(**fields: object) -> Deadline:
    return replace(Deadline("rewarm"), **fields)  # type: ignore[arg-type]


PENDING = row(due_at=T + 60, first_armed_at=T)
RUNNING = row(due_at=T, first_armed_at=T - 60, owner="a", claimed_until=T + 300, attempts=1)


@pytest.mark.parametrize(
    ("before", "mode", "now", "max_wait", "due_at", "first", "rearmed"),
    [
        (None, "earliest", T, None, T + 60, T, False),
        (PENDING, "earliest", T + 30, None, T + 60, T, False),
        (PENDING, "debounced", T + 30, 120, T + 90, T, False),
        (PENDING, "debounced", T + 100, 120, T + 120, T, False),
        (PENDING, "replace", T + 30, None, T + 90, T + 30, False),
        # a live claim runs the old burst: an arm starts a new one, kept after the run
        (RUNNING, "earliest", T + 10, None, T + 70, T + 10, True),
        (RUNNING, "debounced", T + 10, 120, T + 70, T + 10, True),
        # an arm after the lease ended joins the overdue deadline
        (RUNNING, "earliest", T + 400, None, T, T - 60, True),
    ],
)
def test_armed(before: Deadline | None, mode: str, now: float, max_wait: float | None,
               due_at: float, first: float, rearmed: bool) -> None:
    after = armed(before, "rewarm", mode, now, 60, max_wait)  # type: ignore[arg-type]
    assert (after.due_at, after.first_armed_at, after.rearmed) == (due_at, first, rearmed)
    assert (after.owner, after.attempts) == ((None, 0) if before is None else
                                             (before.owner, before.attempts))


def test_a_second_arm_during_a_run_joins_the_first_one_of_that_run() -> None:
    once = armed(RUNNING, "rewarm", "debounced", T + 10, 60, 120)
    twice = armed(once, "rewarm", "debounced", T + 100, 60, 120)
    assert (twice.due_at, twice.first_armed_at, twice.rearmed) == (T + 130, T + 10, True)


@pytest.mark.parametrize(
    ("mode", "delay", "max_wait", "message"),
    [
        ("soon", 1, None, "mode must be one of earliest, debounced, replace"),
        ("earliest", -1, None, "delay must be a finite number >= 0"),
        ("replace", float("nan"), None, "delay must be a finite number >= 0"),
        ("debounced", 1, None, "max_wait is required for mode 'debounced'"),
        ("earliest", 1, 5, "max_wait is required for mode 'debounced' and only for it"),
        ("debounced", 1, -5, "max_wait must be a finite number >= 0"),
        ("debounced", 1, float("inf"), "max_wait must be a finite number >= 0"),
    ],
)
def test_arm_refuses_nonsense(mode: str, delay: float, max_wait: float | None,
                              message: str) -> None:
    with pytest.raises(ValueError, match=message):
        armed(None, "x", mode, T, delay, max_wait)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("before", "now", "force", "claims"),
    [
        (None, T, False, False),
        (row(), T, True, False),  # never armed: even force has nothing to run
        (PENDING, T + 58, False, False),
        (PENDING, T + 60 - DUE_SLACK, False, True),  # within the slack
        (PENDING, T + 60, False, True),
        (PENDING, T, True, True),
        (RUNNING, T + 10, False, False),  # held by a live claim
        (RUNNING, T + 10, True, False),
        (RUNNING, T + 300, False, True),  # lease ended: taken over
    ],
)
def test_claimed(before: Deadline | None, now: float, force: bool, claims: bool) -> None:
    after = claimed(before, "b", now, 30, force=force)
    if not claims:
        assert after is None
        return
    assert before is not None and after is not None
    assert (after.owner, after.claimed_until, after.attempts, after.due_at) == (
        "b", now + 30, before.attempts + 1, before.due_at)


def test_claim_refuses_a_lease_of_zero() -> None:
    with pytest.raises(ValueError, match="lease must be > 0"):
        claimed(PENDING, "b", T, 0)


def test_complete_disarms_and_clears_the_error() -> None:
    after = completed(replace(RUNNING, last_error="boom"), "a", T + 5)
    assert after == row(completed_at=T + 5)


def test_complete_keeps_an_arm_made_during_the_run() -> None:
    rearmed = armed(RUNNING, "rewarm", "earliest", T + 10, 60)
    after = completed(rearmed, "a", T + 20)
    assert after == row(due_at=T + 70, first_armed_at=T + 10, completed_at=T + 20)


@pytest.mark.parametrize("before", [None, PENDING, replace(RUNNING, owner="other")])
def test_complete_and_fail_need_the_claim(before: Deadline | None) -> None:
    assert completed(before, "a", T) is None
    assert failed(before, "a", T, 60, "boom") is None


def test_fail_replaces_the_deadline_with_the_retry() -> None:
    after = failed(RUNNING, "a", T + 5, 600, "x" * (MAX_ERROR_CHARS + 10))
    assert after == row(due_at=T + 605, first_armed_at=T + 5, attempts=1,
                        last_error="x" * MAX_ERROR_CHARS)


@pytest.mark.parametrize(("rearm_delay", "due_at", "first"),
                         [(60, T + 70, T + 10), (6_000, T + 605, T + 5)])
def test_fail_after_a_rearm_keeps_the_sooner(rearm_delay: float, due_at: float,
                                             first: float) -> None:
    rearmed = armed(RUNNING, "rewarm", "earliest", T + 10, rearm_delay)
    after = failed(rearmed, "a", T + 5, 600, "boom")
    assert after is not None
    assert (after.due_at, after.first_armed_at, after.owner, after.rearmed) == (
        due_at, first, None, False)


def test_fail_refuses_a_negative_retry_delay() -> None:
    with pytest.raises(ValueError, match="retry_delay must be >= 0"):
        failed(RUNNING, "a", T, -1, "boom")


# --- due and wake times -------------------------------------------------------------

def test_due_lists_armed_unheld_rows_within_the_slack_soonest_first() -> None:
    rows = [
        row(name="later", due_at=T + 5, first_armed_at=T),
        row(name="slack", due_at=T + DUE_SLACK / 2, first_armed_at=T),
        row(name="overdue", due_at=T - 10, first_armed_at=T - 20),
        row(name="idle"),
        replace(RUNNING, name="running"),
        replace(RUNNING, name="abandoned", claimed_until=T - 1),
    ]
    assert [r.name for r in due(rows, T)] == ["overdue", "abandoned", "slack"]
    assert [r.name for r in due(rows, T, slack=0)] == ["overdue", "abandoned"]


@pytest.mark.parametrize(
    ("deadline", "expected"),
    [
        (row(), None),
        (PENDING, T + 60),
        (RUNNING, T + 300),  # a run elsewhere: look again when its lease ends
        (replace(PENDING, owner="a", claimed_until=T + 30), T + 60),
    ],
)
def test_wake_at(deadline: Deadline, expected: float | None) -> None:
    assert wake_at(deadline) == expected


def test_next_wake_is_the_earliest() -> None:
    assert next_wake([]) is None
    assert next_wake([row(), RUNNING, PENDING]) == T + 60

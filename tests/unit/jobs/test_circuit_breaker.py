"""The worker's circuit breaker: closed -> open -> half-open probe -> closed/open."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.resilience.breaker import (
    BreakerState,
    lease_limit,
    may_lease,
    on_abandoned,
    on_probe,
    on_result,
    seconds_until_probe,
    seconds_until_retry,
)

T0 = 1_000.0
PROBE = 7
OTHER = 8


def run(results: list[bool], state: BreakerState | None = None) -> BreakerState:
    state = state or BreakerState(threshold=3, cooldown=10)
    for ok in results:
        state = on_result(state, OTHER, ok, T0)
    return state


@pytest.mark.parametrize(
    ("results", "phase", "failures"),
    [
        ([], "closed", 0),
        ([False, False], "closed", 2),
        ([False, False, True], "closed", 0),
        ([False, False, True, False, False], "closed", 2),
        ([False, False, False], "open", 3),
        ([False, False, False, True, True], "open", 3),  # late results while open are ignored
    ],
)
def test_transitions_table(results: list[bool], phase: str, failures: int) -> None:
    state = run(results)
    assert (state.phase, state.failures) == (phase, failures)


def test_open_blocks_until_cooldown_then_allows_one_probe() -> None:
    opened = run([False] * 3)
    assert not may_lease(opened, T0 + 9.9)
    assert seconds_until_probe(opened, T0 + 4) == pytest.approx(6)
    assert may_lease(opened, T0 + 10)
    probing = on_probe(opened, T0 + 10, PROBE)
    assert (probing.phase, probing.probe) == ("half_open", PROBE)
    assert not may_lease(probing, T0 + 11)
    assert lease_limit(probing, 8) == 1 and lease_limit(run([]), 8) == 8


def test_probe_result_closes_or_reopens() -> None:
    probing = on_probe(run([False] * 3), T0 + 10, PROBE)
    closed = on_result(probing, PROBE, True, T0 + 11)
    assert (closed.phase, closed.failures, closed.probe) == ("closed", 0, None)
    reopened = on_result(probing, PROBE, False, T0 + 11)
    assert (reopened.phase, reopened.opened_at, reopened.probe) == ("open", T0 + 11, None)
    assert not may_lease(reopened, T0 + 20) and may_lease(reopened, T0 + 21)


def test_only_the_probe_decides_while_half_open() -> None:
    probing = on_probe(run([False] * 3), T0 + 10, PROBE)
    assert on_result(probing, OTHER, True, T0 + 11) == probing
    assert on_result(probing, OTHER, False, T0 + 11) == probing
    assert on_abandoned(probing, OTHER) == probing


def test_abandoned_probe_reopens_ready_for_a_new_probe() -> None:
    opened = run([False] * 3)
    probing = on_probe(opened, T0 + 10, PROBE)
    abandoned = on_abandoned(probing, PROBE)
    assert (abandoned.phase, abandoned.opened_at, abandoned.probe) == ("open", T0, None)
    assert may_lease(abandoned, T0 + 12)  # no second cooldown: the probe said nothing
    assert on_probe(abandoned, T0 + 12, OTHER).probe == OTHER
    assert on_abandoned(opened, PROBE) == opened and on_abandoned(run([]), PROBE) == run([])


def test_on_probe_before_cooldown_changes_nothing() -> None:
    opened = run([False] * 3)
    assert on_probe(opened, T0 + 1, PROBE) == opened
    assert on_probe(run([]), T0, PROBE) == run([])


def test_a_request_turned_away_waits_for_the_probe_or_a_cooldown() -> None:
    opened = run([False] * 3)
    assert seconds_until_retry(run([False] * 2), T0) == 0  # closed: nobody is turned away
    assert seconds_until_retry(opened, T0 + 4) == pytest.approx(6)
    assert seconds_until_retry(opened, T0 + 12) == 0  # the probe is due: ask now
    probing = on_probe(opened, T0 + 12, PROBE)
    assert seconds_until_retry(probing, T0 + 13) == 10  # should the probe fail


@pytest.mark.parametrize(("threshold", "cooldown"), [(0, 1.0), (1, -1.0)])
def test_settings_are_checked(threshold: int, cooldown: float) -> None:
    with pytest.raises(ValueError, match="breaker"):
        BreakerState(threshold=threshold, cooldown=cooldown)


@given(st.lists(st.booleans(), max_size=60), st.integers(min_value=1, max_value=6))
def test_opens_exactly_at_threshold_consecutive_failures(results: list[bool],
                                                         threshold: int) -> None:
    state = BreakerState(threshold=threshold, cooldown=5)
    streak = 0
    for ok in results:
        state = on_result(state, OTHER, ok, T0)
        if state.phase == "open":
            break
        streak = 0 if ok else streak + 1
        assert state.failures == streak < threshold
    else:
        return
    assert streak + 1 == threshold
    assert not may_lease(state, T0)

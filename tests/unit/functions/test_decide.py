"""The function cache's decision (pure), exhaustively: hit, hit and refresh once, or
call; and when a failed call falls back on the stored result."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.functions.decide import Step, Times, Windows, decide, falls_back

SECONDS = st.floats(min_value=0, max_value=1e6, allow_nan=False)
NOW = 1_700_000_000.0


@given(SECONDS, SECONDS, SECONDS)
def test_windows_keep_the_entry_invariants(ttl: float, swr: float, sie: float) -> None:
    times = Windows(ttl, swr, sie).times(NOW)
    assert times.fresh_until == NOW + ttl
    assert times.fresh_until <= times.stale_until <= times.keep_until
    assert times.fresh_until <= times.error_until <= times.keep_until
    assert times.keep_until == max(times.stale_until, times.error_until)


@given(SECONDS, SECONDS, SECONDS, st.floats(min_value=-10, max_value=3e6), st.booleans())
def test_decide_everywhere(ttl: float, swr: float, sie: float, offset: float,
                           in_flight: bool) -> None:
    """Every (windows, instant, in-flight) case against the rule stated window by window."""
    held = Windows(ttl, swr, sie).times(NOW)
    now = NOW + offset
    step = decide(held, now, in_flight=in_flight)
    if now < held.fresh_until:
        assert step is Step.HIT
    elif now < held.stale_until:
        assert step is (Step.HIT if in_flight else Step.HIT_REFRESH)
    else:
        assert step is Step.CALL
    assert falls_back(held, now) == (now < held.keep_until)


@pytest.mark.parametrize("in_flight", [False, True])
def test_nothing_stored_calls_and_has_nothing_to_fall_back_on(in_flight: bool) -> None:
    assert decide(None, NOW, in_flight=in_flight) is Step.CALL
    assert not falls_back(None, NOW)


def test_the_issue_example() -> None:
    """ttl 1m, swr 5m, sie 1h: fresh, then stale and refreshed, then a call that may fall
    back on the stored result for the rest of the hour."""
    held = Windows(60, 300, 3600).times(NOW)
    assert decide(held, NOW + 59, in_flight=False) is Step.HIT
    assert decide(held, NOW + 60, in_flight=False) is Step.HIT_REFRESH
    assert decide(held, NOW + 359, in_flight=True) is Step.HIT
    assert decide(held, NOW + 360, in_flight=False) is Step.CALL
    assert falls_back(held, NOW + 3659) and not falls_back(held, NOW + 3660)


def test_a_soft_purged_result_is_served_stale_and_refreshed() -> None:
    held = Windows(60, 300).times(NOW)
    softened = Times(NOW + 10, held.stale_until, held.error_until, held.keep_until)
    assert decide(softened, NOW + 10, in_flight=False) is Step.HIT_REFRESH


@pytest.mark.parametrize("field", ["ttl", "swr", "sie"])
def test_negative_windows_are_refused(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Windows(**{"ttl": 1.0, field: -1.0})

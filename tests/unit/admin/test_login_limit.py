"""Failed logins limited per client address (pure windows; the limiter on a fake clock)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.admin.login_limit import (
    FAILURES,
    WINDOW,
    Failures,
    LoginLimiter,
    Refused,
    Slot,
    after_failure,
    after_refund,
    retry_after,
    retry_seconds,
)
from stoker.clock import FakeClock


@given(st.lists(st.floats(min_value=0.0, max_value=30.0), max_size=40))
def test_a_client_is_refused_after_the_limit_until_its_window_ends(gaps: list[float]) -> None:
    window: Failures | None = None
    now, started, count = 1000.0, None, 0
    for gap in gaps:
        now += gap
        if started is not None and not started <= now < started + WINDOW:
            started, count = None, 0
        wait = retry_after(window, now, FAILURES, WINDOW)
        if count >= FAILURES:
            assert started is not None and wait == started + WINDOW - now
            continue  # refused: not even tried, so not counted
        assert wait is None
        window = after_failure(window, now, WINDOW)
        started = now if started is None else started
        count += 1
        assert window == Failures(started, count)


def test_the_limiter_refuses_the_sixth_try_refunds_a_success_and_bounds_clients() -> None:
    clock = FakeClock()
    limiter = LoginLimiter(clock, max_clients=2)
    slots = [limiter.reserve("10.0.0.1") for _ in range(FAILURES)]
    assert all(isinstance(slot, Slot) for slot in slots)
    assert limiter.reserve("10.0.0.1") == Refused(WINDOW)  # counted before any compare
    clock.advance(WINDOW - 1)
    assert limiter.reserve("10.0.0.1") == Refused(1.0)
    assert isinstance(limiter.reserve("10.0.0.2"), Slot)  # another address is not held up
    clock.advance(1)
    right = limiter.reserve("10.0.0.1")  # the window ended
    assert isinstance(right, Slot)
    limiter.refund(right)
    for address in ("10.0.0.3", "10.0.0.4", "10.0.0.5"):
        limiter.reserve(address)
    for _ in range(FAILURES):
        limiter.reserve("10.0.0.6")  # beyond max_clients: shares the others' window
    assert isinstance(limiter.reserve("10.0.0.7"), Refused)


def test_a_refund_gives_back_its_own_slot_only_and_only_in_its_window() -> None:
    clock = FakeClock()
    limiter = LoginLimiter(clock)
    wrong = [limiter.reserve("c") for _ in range(FAILURES - 1)]
    right = limiter.reserve("c")
    assert isinstance(right, Slot) and all(isinstance(slot, Slot) for slot in wrong)
    limiter.refund(right)
    assert isinstance(limiter.reserve("c"), Slot)  # the right one's slot came back...
    assert isinstance(limiter.reserve("c"), Refused)  # ...never the failures beside it
    clock.advance(WINDOW)
    fresh = limiter.reserve("c")
    limiter.refund(right)  # a slot of an ended window gives nothing back in the new one
    assert isinstance(fresh, Slot)
    assert after_refund(Failures(fresh.started, 1), right) == Failures(fresh.started, 1)
    assert after_refund(Failures(right.started, 1), right) is None


@given(st.integers(min_value=1, max_value=20), st.integers(min_value=0, max_value=60))
def test_of_any_burst_at_most_the_limit_is_let_through(limit: int, tries: int) -> None:
    limiter = LoginLimiter(FakeClock(), limit=limit)
    taken = [limiter.reserve("c") for _ in range(tries)]
    assert sum(isinstance(slot, Slot) for slot in taken) == min(limit, tries)


@pytest.mark.parametrize(("wait", "seconds"), [(0.0, 1), (0.2, 1), (1.0, 1), (1.01, 2),
                                               (59.5, 60)])
def test_retry_seconds_round_up_to_at_least_one(wait: float, seconds: int) -> None:
    assert retry_seconds(wait) == seconds

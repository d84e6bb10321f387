"""Failed logins limited per client address (pure windows; the limiter on a fake clock)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stoker.admin.audit import OTHER_CLIENTS
from stoker.admin.login_limit import (
    FAILURES,
    WINDOW,
    Failures,
    LoginLimiter,
    after_failure,
    retry_after,
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


def test_the_limiter_refuses_the_sixth_try_forgets_on_success_and_bounds_clients() -> None:
    clock = FakeClock()
    limiter = LoginLimiter(clock, max_clients=2)
    for _ in range(FAILURES):
        assert limiter.retry_after("10.0.0.1") is None
        limiter.failed("10.0.0.1")
    assert limiter.retry_after("10.0.0.1") == WINDOW
    clock.advance(WINDOW - 1)
    assert limiter.retry_after("10.0.0.1") == 1.0
    assert limiter.retry_after("10.0.0.2") is None  # another address is not held up
    clock.advance(1)
    assert limiter.retry_after("10.0.0.1") is None  # the window ended
    limiter.failed("10.0.0.1")
    limiter.succeeded("10.0.0.1")
    for address in ("10.0.0.3", "10.0.0.4", "10.0.0.5"):
        limiter.failed(address)
    for _ in range(FAILURES):
        limiter.failed("10.0.0.6")  # beyond max_clients: shares the others' window
    assert limiter.retry_after("10.0.0.7") is not None
    limiter.succeeded(OTHER_CLIENTS)
    assert limiter.retry_after("10.0.0.7") is not None  # the shared window is never forgotten

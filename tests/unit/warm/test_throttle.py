"""The AIMD warm throttle: tables for each transition, properties for the bounds."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.dates import format_http_date
from stoker.warm.throttle import (
    ThrottleState,
    allowed,
    on_result,
    retry_after_seconds,
)

NOW = 1_700_000_000.0


def warmed(limit: int, *, baseline: float = 0.1, streak: int = 0,
           max_concurrency: int = 8) -> ThrottleState:
    """A controller that has seen traffic: baseline and recent both at ``baseline``."""
    return ThrottleState(max_concurrency, limit=limit, baseline=baseline, recent=baseline,
                         streak=streak)


def test_first_sample_sets_both_averages_and_keeps_the_limit() -> None:
    state = on_result(ThrottleState(8), 0.2, 200, None, NOW)
    assert (state.limit, state.baseline, state.recent) == (1, 0.2, 0.2)


@pytest.mark.parametrize(
    ("limit", "streak", "latency", "expected_limit", "expected_streak"),
    [
        (1, 0, 0.1, 2, 0),     # a full window of one good visit: +1
        (4, 0, 0.1, 4, 1),     # good, window not full yet
        (4, 3, 0.1, 5, 0),     # fourth good visit in a row: +1
        (4, 3, 0.15, 5, 0),    # exactly 1.5x the baseline is still near
        (8, 7, 0.1, 8, 0),     # never above warm_max_concurrency
        (4, 3, 0.16, 4, 3),    # a lone slow visit (recent still near): hold
    ],
)
def test_additive_increase_per_window_of_good_visits(
        limit: int, streak: int, latency: float, expected_limit: int,
        expected_streak: int) -> None:
    state = on_result(warmed(limit, streak=streak), latency, 200, None, NOW)
    assert (state.limit, state.streak) == (expected_limit, expected_streak)


@pytest.mark.parametrize(
    ("limit", "recent", "latency", "expected_limit"),
    [
        (8, 0.2, 0.3, 4),    # slow visit while recent is slow: halve
        (5, 0.2, 0.3, 2),    # halving rounds down
        (2, 0.2, 0.3, 1),
        (8, 0.1, 0.2, 8),    # one slow visit, recent still near: hold
        (8, 0.2, 0.1, 8),    # fast visit, recent still slow: hold
    ],
)
def test_multiplicative_decrease_on_rising_latency(
        limit: int, recent: float, latency: float, expected_limit: int) -> None:
    state = on_result(replace(warmed(limit), recent=recent), latency, 200, None, NOW)
    assert state.limit == expected_limit


def test_one_halving_per_window() -> None:
    slow = replace(warmed(8), recent=0.3)
    cut = on_result(slow, 0.3, 200, None, NOW)
    assert (cut.limit, cut.cut_at) == (4, NOW)
    in_flight_at_cut = on_result(cut, 0.3, 200, None, NOW + 0.1)
    assert in_flight_at_cut.limit == 4
    started_after = on_result(in_flight_at_cut, 0.3, 200, None, NOW + 0.4)
    assert started_after.limit == 2


def test_at_the_floor_congestion_moves_the_baseline() -> None:
    state = on_result(replace(warmed(1), recent=0.5), 0.5, 200, None, NOW)
    assert state.limit == 1
    assert state.baseline == pytest.approx(0.5)
    grown = on_result(state, 0.5, 200, None, NOW + 1)
    assert grown.limit == 2


@pytest.mark.parametrize(
    ("status", "retry_after", "expected_limit", "expected_wait"),
    [
        (429, None, 4, float("-inf")),
        (503, None, 4, float("-inf")),
        (429, "30", 4, NOW + 30),
        (503, format_http_date(NOW + 120), 4, NOW + 120),
        (503, format_http_date(NOW - 120), 4, NOW),       # a date in the past: no wait
        (429, "not a date", 4, float("-inf")),
        (429, "99999999", 4, NOW + 600),                  # capped by max_wait
        (429, "9" * 5000, 4, NOW + 600),
        (500, "30", 8, float("-inf")),                    # other 5xx: hold, no wait
        (502, None, 8, float("-inf")),
    ],
)
def test_backoff_statuses_halve_and_wait_out_retry_after(
        status: int, retry_after: str | None, expected_limit: int,
        expected_wait: float) -> None:
    state = on_result(warmed(8), 0.05, status, retry_after, NOW)
    assert (state.limit, state.wait_until) == (expected_limit, expected_wait)
    assert state.baseline == 0.1


def test_allowed_is_zero_while_waiting_then_the_limit() -> None:
    state = on_result(warmed(8), 0.05, 429, "30", NOW)
    assert allowed(state, NOW) == 0
    assert allowed(state, NOW + 29.9) == 0
    assert allowed(state, NOW + 30) == 4


def test_a_shorter_retry_after_does_not_shorten_a_wait() -> None:
    state = on_result(warmed(8), 0.05, 429, "60", NOW)
    state = on_result(state, 0.05, 429, "5", NOW + 1)
    assert state.wait_until == NOW + 60


@pytest.mark.parametrize(
    ("value", "expected"),
    [("0", 0.0), (" 12 ", 12.0), ("²", None), ("-3", None), ("1.5", None), (None, None),
     (format_http_date(NOW + 7), 7.0)],
)
def test_retry_after_seconds(value: str | None, expected: float | None) -> None:
    assert retry_after_seconds(value, NOW) == expected


@pytest.mark.parametrize(
    "fields",
    [{"max_concurrency": 0}, {"limit": 9}, {"limit": 0}, {"tolerance": 1.0},
     {"fast": 0.0}, {"slow": 1.5}, {"max_wait": -1.0}],
)
def test_bad_settings_are_refused(fields: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must"):
        ThrottleState(**{"max_concurrency": 8, **fields})  # type: ignore[arg-type]


results = st.lists(st.tuples(
    st.floats(0, 60),                                            # latency
    st.sampled_from([200, 200, 200, 304, 404, 429, 500, 503]),  # status
    st.one_of(st.none(), st.integers(0, 10**6).map(str), st.text(max_size=30)),
    st.floats(0, 120),                                           # time since the last result
), max_size=200)


@given(max_concurrency=st.integers(1, 64), results=results)
def test_limit_stays_within_bounds(max_concurrency: int,
                                   results: list[tuple[float, int, str | None, float]]) -> None:
    state, now = ThrottleState(max_concurrency), NOW
    for latency, status, retry_after, step in results:
        now += step
        state = on_result(state, latency, status, retry_after, now)
        assert 1 <= state.limit <= max_concurrency
        assert state.wait_until <= now + state.max_wait
        if now >= state.wait_until:
            assert 1 <= allowed(state, now) <= max_concurrency
        else:
            assert allowed(state, now) == 0


@given(max_concurrency=st.integers(2, 64), n=st.integers(0, 300))
def test_steady_latency_grows_to_the_max_and_stays(max_concurrency: int, n: int) -> None:
    state = ThrottleState(max_concurrency)
    for i in range(n):
        state = on_result(state, 0.05, 200, None, NOW + i)
    needed = 1 + sum(range(1, max_concurrency))  # the first visit sets the baseline
    assert (state.limit == max_concurrency) == (n >= needed)

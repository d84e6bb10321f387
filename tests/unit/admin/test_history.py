"""The overview's last hour per minute, the request rate and latency quantiles (pure)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from stoker.admin.history import MINUTES, History, Sample, minute_figures, quantile
from stoker.origin.timing import BUCKETS, OriginTiming

T0 = 1_700_000_040.0  # a minute's start


def test_quantile_interpolates_within_a_bucket_like_prometheus() -> None:
    timing = OriginTiming()
    for seconds in (0.001, 0.002, 0.02, 0.03):
        timing.answered(seconds)
    assert quantile(timing.counts, 0.5) == BUCKETS[0]  # 2 of 4 within the first bucket
    assert math.isclose(quantile(timing.counts, 0.625) or 0, 0.0175)  # halfway in (10, 25] ms
    assert quantile([0] * len(timing.counts), 0.5) is None
    timing.answered(60.0)
    assert quantile(timing.counts, 0.99) == BUCKETS[-1]  # past every bound: the highest


@given(st.lists(st.floats(min_value=0.0001, max_value=20.0), min_size=1, max_size=50),
       st.floats(min_value=0.01, max_value=1.0))
def test_quantile_lands_in_the_right_bucket(times: list[float], q: float) -> None:
    timing = OriginTiming()
    for seconds in times:
        timing.answered(seconds)
    found = quantile(timing.counts, q)
    assert found is not None and 0.0 <= found <= BUCKETS[-1]
    exact = sorted(times)[max(0, math.ceil(q * len(times)) - 1)]
    bounds = (0.0, *BUCKETS, math.inf)
    bucket = next(i for i in range(1, len(bounds)) if exact <= bounds[i])
    assert bounds[bucket - 1] <= found <= min(bounds[bucket], BUCKETS[-1])


def sample(at: float, requests: int, cache: int = 0, errors: int = 0) -> Sample:
    return Sample(at=at, requests=requests, cache=cache, errors=errors)


def test_minutes_are_differences_of_the_first_samples_of_each_minute() -> None:
    history = History()
    for second, requests in ((0, 0), (30, 50), (60, 100), (61, 110), (120, 130)):
        history.observe(sample(T0 + second, requests, cache=requests // 2))
    rows = history.minutes(sample(T0 + 150, 160, cache=80))
    assert [(r["minute"], r["requests"], r["cache"], r["origin"]) for r in rows] == [
        (T0, 100, 50, 50), (T0 + 60, 30, 15, 15), (T0 + 120, 30, 15, 15)]


def test_a_minute_without_a_sample_is_left_out_not_made_up() -> None:
    history = History()
    history.observe(sample(T0, 0))
    history.observe(sample(T0 + 300, 500))  # nobody sampled for five minutes
    assert [r["minute"] for r in history.minutes(sample(T0 + 310, 510))] == [T0 + 300]


def test_only_the_last_hour_is_kept() -> None:
    history = History()
    for minute in range(MINUTES * 2):
        history.observe(sample(T0 + minute * 60, minute))
    rows = history.minutes(sample(T0 + MINUTES * 2 * 60 - 1, MINUTES * 2))
    assert len(rows) == MINUTES and rows[-1]["minute"] == T0 + (MINUTES * 2 - 1) * 60


def test_a_counter_that_went_back_counts_zero() -> None:
    assert minute_figures(sample(T0, 100, 50), sample(T0 + 30, 10, 5))["requests"] == 0


def test_rate_over_the_last_seconds() -> None:
    history = History()
    assert history.rate(sample(T0, 0)) == 0.0
    for second in range(30):
        history.observe(sample(T0 + second, second * 20))
    assert history.rate(sample(T0 + 30, 600)) == 20.0

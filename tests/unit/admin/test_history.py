"""The overview's windows (5 minutes, an hour, a day, each in 60 slots), the request rate
and latency quantiles (pure)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from stoker.admin.history import POINTS, WINDOWS, History, Sample, quantile, slot_figures
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


def hour(history: History, now: Sample) -> list[dict[str, object]]:
    return history.windows(now)["1h"]["rows"]  # type: ignore[no-any-return]


def test_slots_are_differences_of_the_first_samples_of_each_slot() -> None:
    history = History()
    for second, requests in ((0, 0), (30, 50), (60, 100), (61, 110), (120, 130)):
        history.observe(sample(T0 + second, requests, cache=requests // 2))
    rows = hour(history, sample(T0 + 150, 160, cache=80))
    assert [(r["at"], r["requests"], r["cache"], r["origin"]) for r in rows] == [
        (T0, 100, 50, 50), (T0 + 60, 30, 15, 15), (T0 + 120, 30, 15, 15)]
    assert history.windows(sample(T0 + 150, 160))["5m"]["rows"] == []  # slots 30 s apart


def test_the_five_minute_window_has_five_second_slots() -> None:
    history = History()
    for second in range(12):  # sampled every second, as the hub does
        history.observe(sample(T0 + second, second * 2, cache=second))
    five = history.windows(sample(T0 + 12, 24, cache=12))["5m"]
    assert five["step"] == 5.0
    assert [(r["at"], r["requests"], r["cache"]) for r in five["rows"]] == [
        (T0, 10, 5), (T0 + 5, 10, 5), (T0 + 10, 4, 2)]


def test_a_slot_without_a_sample_is_left_out_not_made_up() -> None:
    history = History()
    history.observe(sample(T0, 0))
    history.observe(sample(T0 + 300, 500))  # nobody sampled for five minutes
    assert [r["at"] for r in hour(history, sample(T0 + 310, 510))] == [T0 + 300]


@given(st.sampled_from(sorted(WINDOWS)), st.integers(min_value=1, max_value=5))
def test_each_window_keeps_its_last_points_only_whatever_the_uptime(name: str,
                                                                    laps: int) -> None:
    step, start = WINDOWS[name], 1440.0 * 1_200_000  # a start every slot length divides
    history = History()
    slots = POINTS * (laps + 1)
    for slot in range(slots):
        history.observe(sample(start + slot * step, slot))
    window = history.windows(sample(start + slots * step - 1, slots))[name]
    assert len(window["rows"]) == POINTS  # bounded: no more than the window shows
    assert window["rows"][-1]["at"] == start + (slots - 1) * step
    assert all(r["requests"] == 1 for r in window["rows"])
    assert all(len(ring._firsts) <= POINTS + 1 for ring in history._rings.values())


def test_a_counter_that_went_back_counts_zero() -> None:
    assert slot_figures(sample(T0, 100, 50), sample(T0 + 30, 10, 5), 60.0)["requests"] == 0


def test_rate_over_the_last_seconds() -> None:
    history = History()
    assert history.rate(sample(T0, 0)) == 0.0
    for second in range(30):
        history.observe(sample(T0 + second, second * 20))
    assert history.rate(sample(T0 + 30, 600)) == 20.0

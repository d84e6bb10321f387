"""Which failures an origin's outage caused, what is visited again once it answers, and
the backoff between tries (the invariants of :mod:`stoker.warm.recovery`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.warm.recovery import backoff, down_status, origin_down, to_retry
from stoker.warm.visits import NOT_STORED, STALE_SERVED


@pytest.mark.parametrize(("detail", "down"), [
    ("status 0", True), ("status 500", True), ("status 502", True), ("status 503", True),
    ("status 504", True), ("status 599", True), (STALE_SERVED, True),
    ("status 404", False), ("status 403", False), ("status 410", False),
    ("status 600", False), ("status x", False), ("status ", False), (NOT_STORED, False),
    ("private", False), ("", False), (None, False),
])
def test_only_no_answer_a_5xx_or_a_stale_stand_in_is_the_origin_down(
        detail: str | None, down: bool) -> None:
    assert origin_down(detail) is down


@given(st.integers(0, 999))
def test_a_status_is_down_exactly_when_none_or_5xx(status: int) -> None:
    assert down_status(status) == (status == 0 or 500 <= status <= 599)
    assert origin_down(f"status {status}") == down_status(status)


_details = st.sampled_from(["status 502", "status 404", STALE_SERVED, "status 0", None])


@given(st.lists(st.tuples(st.sampled_from("abcdef"), _details)))
def test_to_retry_keeps_the_outages_urls_once_in_order(
        failures: list[tuple[str, str | None]]) -> None:
    retried = to_retry(failures)
    assert len(retried) == len(set(retried))
    assert set(retried) == {url for url, detail in failures if origin_down(detail)}
    firsts = [url for url, detail in failures if origin_down(detail)]
    assert retried == list(dict.fromkeys(firsts))


@given(st.integers(1, 200), st.floats(0.01, 1e4), st.floats(0.01, 1e6))
def test_backoff_doubles_from_first_and_never_passes_most(
        tries: int, first: float, most: float) -> None:
    wait = backoff(tries, first, most)
    assert wait <= most
    assert wait == min(most, first * 2.0 ** (tries - 1))
    assert backoff(tries + 1, first, most) == min(most, 2 * wait) or wait == most


def test_backoff_counts_tries_from_one() -> None:
    assert [backoff(n, 30, 1800) for n in (1, 2, 3, 6, 7, 50)] == [
        30, 60, 120, 960, 1800, 1800]
    with pytest.raises(ValueError, match="tries must be >= 1"):
        backoff(0, 30, 1800)

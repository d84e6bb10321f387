"""Classifying a warm visit from what the pipeline answered: its status, its headers (for
the stopgap header) and its typed outcome."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.cache.outcome import FROM_CACHE, Kind, Outcome
from stoker.warm.visits import (
    NOT_STORED,
    OUTCOMES,
    STALE_SERVED,
    STOPGAP_STATUSES,
    Verdict,
    judge,
)

STOPGAP = b"x-stoker-stopgap"


# Every outcome the pipeline gives a warm visit (proxy/pipeline.py, fetch.py).
@pytest.mark.parametrize(("status", "outcome", "verdict"), [
    # from cache: fresh, landed while reading L2, or stale standing in for the origin
    (200, Outcome(Kind.HIT, ttl=30), Verdict("fresh")),
    (200, Outcome(Kind.STALE_SWR, ttl=3, detail="stale-while-revalidate"), Verdict("fresh")),
    (200, Outcome(Kind.STALE_ERROR, ttl=-5, detail="stale-if-error"),
     Verdict("failed", STALE_SERVED)),
    (301, Outcome(Kind.STALE_ERROR, ttl=-5), Verdict("failed", STALE_SERVED)),
    # fetched and stored, shared from the fetch that stored it, refreshed by a 304
    (200, Outcome(Kind.MISS, fwd="uri-miss", fwd_status=200, stored=True, ttl=60),
     Verdict("warmed")),
    (301, Outcome(Kind.MISS, fwd="uri-miss", fwd_status=301, stored=True), Verdict("warmed")),
    (200, Outcome(Kind.COLLAPSED, fwd="uri-miss", fwd_status=200, ttl=60), Verdict("warmed")),
    (200, Outcome(Kind.REVALIDATED, fwd="request", fwd_status=304, stored=True, ttl=60),
     Verdict("not_modified")),
    # passed through: the storage decision's reason
    *[(200, Outcome(Kind.PASS, fwd="uri-miss", fwd_status=200, detail=reason),
       Verdict("not_stored", reason))
      for reason in ("set-cookie", "private", "no-store", "no-freshness", "too-large",
                     "corrupt-coding")],
    (200, Outcome(Kind.BYPASS, fwd="bypass", fwd_status=200, detail="cookie"),
     Verdict("not_stored", "cookie")),
    (200, Outcome(Kind.BYPASS, fwd="bypass", fwd_status=200),
     Verdict("not_stored", NOT_STORED)),
    (200, Outcome(Kind.REVALIDATED, fwd="request", fwd_status=304),
     Verdict("not_stored", NOT_STORED)),
    (200, Outcome(Kind.MISS, fwd="uri-miss", fwd_status=200, stored=True).not_stored("purged"),
     Verdict("not_stored", "purged")),
    # errors, whatever the outcome says
    (404, Outcome(Kind.MISS, fwd="uri-miss", fwd_status=404, stored=True),
     Verdict("failed", "status 404")),
    (502, Outcome(Kind.ERROR, fwd="uri-miss", fwd_status=502, detail="origin-error"),
     Verdict("failed", "status 502")),
    (504, Outcome(Kind.ERROR, fwd="uri-miss", fwd_status=504, detail="origin-timeout"),
     Verdict("failed", "status 504")),
    (200, Outcome(Kind.ERROR, detail="generated"), Verdict("failed", "status 200")),
    (200, None, Verdict("failed", "status 200")),
    # placeholders
    (503, Outcome(Kind.PASS, fwd="uri-miss", fwd_status=503), Verdict("stopgap")),
    (202, Outcome(Kind.PASS, fwd="uri-miss", fwd_status=202), Verdict("stopgap")),
])
def test_judge(status: int, outcome: Outcome | None, verdict: Verdict) -> None:
    assert judge(status, [], outcome, stopgap_header=STOPGAP) == verdict


def test_the_stopgap_header_makes_a_stopgap_whatever_the_outcome() -> None:
    passed = Outcome(Kind.PASS, fwd="uri-miss", fwd_status=200, detail="stopgap")
    assert judge(200, [(STOPGAP, b"1")], passed, stopgap_header=STOPGAP) == Verdict("stopgap")


# --- properties, over every outcome ------------------------------------------------------

_outcomes = st.builds(
    Outcome, st.sampled_from(list(Kind)),
    st.none() | st.sampled_from(["uri-miss", "request", "stale", "bypass"]),
    st.none() | st.sampled_from([200, 301, 304, 404]), st.booleans(),
    st.none() | st.floats(-1e6, 1e6), st.none() | st.text(max_size=30))


@given(status=st.integers(100, 599), outcome=_outcomes, stopgap=st.booleans())
def test_outcome_and_detail_follow_the_module_invariants(
        status: int, outcome: Outcome, stopgap: bool) -> None:
    headers = [(STOPGAP, b"1")] if stopgap else []
    verdict, detail = judge(status, headers, outcome, stopgap_header=STOPGAP)
    assert verdict in OUTCOMES
    assert bool(detail) == (verdict in ("not_stored", "failed"))
    if outcome.kind is Kind.ERROR:  # Stoker's own answer: the origin was not heard
        expected = "failed"
    elif stopgap or status in STOPGAP_STATUSES:
        expected = "stopgap"
    elif status >= 400:
        expected = "failed"
    elif outcome.kind in FROM_CACHE:
        expected = "failed" if outcome.kind is Kind.STALE_ERROR else "fresh"
    elif outcome.stored or outcome.kind is Kind.COLLAPSED:
        expected = "not_modified" if outcome.fwd_status == 304 else "warmed"
    else:
        expected = "not_stored"
        assert detail == (outcome.detail or NOT_STORED)
    assert verdict == expected


def test_stokers_own_503_while_the_origin_is_down_is_a_failure_not_a_stopgap() -> None:
    down = Outcome(Kind.ERROR, detail="origin-down")
    assert judge(503, [], down, stopgap_header=STOPGAP) == ("failed", "status 503")
    assert judge(503, [], Outcome(Kind.PASS), stopgap_header=STOPGAP) == ("stopgap", "")

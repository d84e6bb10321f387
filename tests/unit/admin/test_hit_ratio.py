"""The one hit ratio: where each outcome counts, and the same figure on every surface
(``/api/status`` and its member lines, ``stoker status``, ``/metrics``; the dashboard
shows ``/api/status``'s: tests/integration/test_overview_browser.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from tests.unit.admin.test_metrics import figures, samples

from stoker.admin.hit_ratio import hit_ratio, place, places, uncacheable_reasons
from stoker.admin.metrics import member_summary, said, shares
from stoker.admin.status import fractions, node_figures
from stoker.cli.status import Sample, summary

KINDS = ("hit", "stale-while-revalidate", "stale-if-error", "revalidated", "miss",
         "collapsed", "pass", "bypass", "error")
REASONS = ("", "cookie", "no-store", "origin-down", "origin-timeout", "origin-error",
           "bad-request", "generated")
OUTCOMES = st.dictionaries(st.tuples(st.sampled_from(KINDS), st.sampled_from(REASONS),
                                     st.booleans()),
                           st.integers(min_value=0, max_value=10**9), max_size=20)


def test_origin_failures_are_not_stokers_own_errors_and_warm_visits_stand_apart() -> None:
    assert place("error", "origin-down", False) == "origin_failure"
    assert place("error", "origin-timeout", False) == "origin_failure"
    assert place("error", "bad-request", False) == "error"
    assert place("error", "generated", False) == "error"
    assert place("hit", "", True) == place("error", "origin-down", True) == "warm"
    assert place("stale-if-error", "", False) == "cache"
    assert place("bypass", "cookie", False) == place("pass", "no-store", False) == "uncacheable"


def test_the_hit_ratio_is_the_share_of_visitors_requests_answered_from_the_cache() -> None:
    split = places({("hit", "", False): 3, ("stale-while-revalidate", "", False): 1,
                   ("miss", "", False): 2, ("pass", "no-store", False): 1,
                   ("error", "origin-down", False): 1, ("error", "bad-request", False): 5,
                   ("miss", "", True): 100})
    assert hit_ratio(split) == 0.5  # 4 of 8: the refusals and the warm misses are not in it
    assert hit_ratio(places({})) is None
    assert hit_ratio(places({("miss", "", True): 4, ("error", "bad-request", False): 1})) is None


def test_uncacheable_requests_are_told_by_reason_most_first() -> None:
    assert uncacheable_reasons({("pass", "no-store", False): 2, ("bypass", "cookie", False): 5,
                                ("bypass", "cookie", True): 9, ("miss", "", False): 3,
                                ("pass", "", False): 1}) == {
        "bypass: cookie": 5, "pass: no-store": 2, "pass: unknown": 1}


@given(OUTCOMES)
def test_every_surface_gives_the_same_hit_ratio(outcomes: dict[tuple[str, str, bool], int]
                                                ) -> None:
    split = shares(outcomes)
    ratio = hit_ratio(split)
    # /api/status: the share by cache, this node's line and a member's line
    assert fractions(split)["cache"] == (ratio or 0.0)
    assert node_figures(outcomes, True, [], 0, 0)["hit_ratio"] == ratio
    assert member_summary(said(figures(outcomes=outcomes)))["hit_ratio"] == ratio
    # stoker status, from what /api/status answers
    assert summary(Sample({"served_by": split}, 0.0, 0.0))["hit_ratio"] == ratio
    # /metrics: hits / (hits + misses + passes + origin failure replies)
    found = samples(figures(outcomes=outcomes))
    hits, answered = found["stoker_cache_hits_total", ()], sum(
        found[name, ()] for name in ("stoker_cache_hits_total", "stoker_cache_misses_total",
                                     "stoker_cache_passes_total",
                                     "stoker_origin_failure_replies_total"))
    assert (round(hits / answered, 4) if answered else None) == ratio
    assert found["stoker_warm_requests_total", ()] == sum(
        count for (_, _, warm), count in outcomes.items() if warm)

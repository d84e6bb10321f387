"""The verdict on a finished warm run: tables for the words, hypothesis for when it warns."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stoker.warm.run import PHASES, Counts, Run
from stoker.warm.verdict import MIN_URLS, MIN_WARMED_SHARE, warmed_count, warning


def ended(total: int, *, scope: str = "site", phase: str = "done", error: str | None = None,
          **counts: int) -> Run:
    return Run(7, "manual", scope, phase, 1.0, Counts(total=total, **counts),  # type: ignore[arg-type]
               finished_at=2.0, error=error)


def test_the_testers_run_found_one_url_and_says_why() -> None:
    run = ended(1, warmed=1, skipped=54)
    said = warning(run, {"feed": 4, "other_host": 50, "query": 0})
    assert said == ("found only 1 URL (54 skipped (other_host: 50, feed: 4); if a host they "
                    "name is the site's, add it to site_aliases)")
    assert warning(ended(1, warmed=1, skipped=3), {"feed": 2, "other_host": 1}) == \
        "found only 1 URL (3 skipped (feed: 2, other_host: 1))"


def test_a_run_that_warmed_too_few_says_what_happened_to_the_rest() -> None:
    run = ended(10, warmed=3, not_stored=5, failed=1, gave_up=1)
    assert warning(run, {}, {"private": 1, "set-cookie": 4}) == (
        "warmed only 3 of 10 URLs (5 not stored (set-cookie: 4, private: 1), 1 failed, "
        "1 gave up)")


def test_both_at_once_and_an_empty_site() -> None:
    assert warning(ended(1, not_stored=1), {}, {"private": 1}) == (
        "found only 1 URL (0 skipped); warmed only 0 of 1 URL (1 not stored (private: 1))")
    assert warning(ended(0)) == "found only 0 URLs (0 skipped)"


def test_fine_runs_and_unfinished_ones_say_nothing() -> None:
    assert warning(ended(2, warmed=1, not_modified=0, not_stored=1)) is None
    assert warning(ended(4, not_modified=1, rewarmed=1, failed=2)) is None
    assert warning(ended(1, scope="urls", warmed=1)) is None  # a re-warm of one page
    assert warning(ended(1, phase="warm")) is None
    assert warning(ended(1, phase="collect")) is None
    assert warning(ended(1, phase="cancelled")) is None


def test_a_failed_run_says_its_error() -> None:
    assert warning(ended(0, phase="failed", error="https://x/sitemap.xml: cycle")) == \
        "failed: https://x/sitemap.xml: cycle"
    assert warning(ended(0, phase="failed")) == "failed: no reason given"


def test_a_targeted_run_that_warmed_too_few_warns() -> None:
    assert warning(ended(3, scope="urls", warmed=1, failed=2)) == \
        "warmed only 1 of 3 URLs (2 failed)"


tallies = st.integers(0, 40)


@given(st.sampled_from(PHASES), st.sampled_from(["site", "urls"]), tallies, tallies, tallies,
       tallies, tallies, tallies, tallies,
       st.dictionaries(st.sampled_from(["feed", "admin", "file", "other_host"]), tallies))
def test_it_warns_exactly_when_a_run_ended_badly(
        phase: str, scope: str, warmed: int, not_modified: int, rewarmed: int,
        not_stored: int, failed: int, gave_up: int, queued: int,
        skipped: dict[str, int]) -> None:
    total = warmed + not_modified + rewarmed + not_stored + failed + gave_up + queued
    run = ended(total, scope=scope, phase=phase, warmed=warmed, not_modified=not_modified,
                rewarmed=rewarmed, not_stored=not_stored, failed=failed, gave_up=gave_up,
                skipped=sum(skipped.values()))
    said = warning(run, skipped)
    in_cache = warmed + not_modified + rewarmed
    assert warmed_count(run) == in_cache
    too_few = scope == "site" and total < MIN_URLS
    cold = in_cache < MIN_WARMED_SHARE * total
    if phase == "done":
        assert (said is not None) == (too_few or cold)
        assert (said is not None and "found only" in said) == too_few
        assert (said is not None and "warmed only" in said) == cold
        for reason, count in skipped.items():
            if too_few and count:
                assert said is not None and f"{reason}: {count}" in said
    elif phase == "failed":
        assert said is not None and said.startswith("failed: ")
    else:
        assert said is None

"""The record of what the cache left out: counts by reason, details, top URLs and
sections, the last reason per URL, its bounds, and merging the processes' snapshots."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.cache import not_cached
from stoker.cache.not_cached import (
    LAST_KEPT,
    OTHER,
    REASONS_KEPT,
    SHOWN,
    TEXT_KEPT,
    LastSeen,
    NotCachedLog,
    cut,
    merged,
    section_of,
)

SITE = "https://www.example.com"


@pytest.mark.parametrize(("url", "section"), [
    (f"{SITE}/", f"{SITE}/"),
    (SITE, f"{SITE}/"),
    (f"{SITE}/about", f"{SITE}/about"),
    (f"{SITE}/about?page=2", f"{SITE}/about"),
    (f"{SITE}/blog/", f"{SITE}/blog/"),
    (f"{SITE}/blog/2024/post?x=1", f"{SITE}/blog/"),
    ("http://h:8080/a/b", "http://h:8080/a/"),
])
def test_a_section_is_the_first_path_segment(url: str, section: str) -> None:
    assert section_of(url) == section


@given(st.lists(st.text(alphabet="abc-", min_size=1, max_size=5), max_size=4),
       st.booleans())
def test_a_section_is_a_prefix_of_its_url(segments: list[str], slash: bool) -> None:
    url = f"{SITE}/" + "/".join(segments) + ("/" if slash and segments else "")
    section = section_of(url)
    assert url.startswith(section)
    assert section[len(SITE):].count("/") <= 2


def test_counts_details_urls_and_sections_per_reason() -> None:
    log = NotCachedLog()
    for number in range(3):
        log.record("no-freshness", f"{SITE}/blog/{number}", 10.0, status=200)
    log.record("no-freshness", f"{SITE}/blog/0", 11.0, status=200)
    log.record("cookie", f"{SITE}/news/1", 12.0, details=("_ga", "theme", "_ga"))
    log.record("cookie", f"{SITE}/news/2", 13.0, details=("_ga",))
    snapshot = log.snapshot()
    assert snapshot["total"] == 6
    fresh, cookie = snapshot["reasons"]
    assert (fresh["reason"], fresh["count"], fresh["details"]) == ("no-freshness", 4, {})
    assert fresh["urls"][0] == [f"{SITE}/blog/0", 2, 0]
    assert fresh["sections"] == [[f"{SITE}/blog/", 4, 0, 3]]  # 4 responses, 3 pages
    assert cookie["details"] == {"_ga": 2, "theme": 1}  # once per record that names it
    assert json.loads(json.dumps(snapshot)) == snapshot  # plain JSON: it rides the bus


def test_the_last_record_of_a_url_is_kept() -> None:
    log = NotCachedLog()
    log.record("no-freshness", f"{SITE}/a", 1.0, status=200)
    log.record("set-cookie", f"{SITE}/a", 2.0, status=200, details=("sid",))
    assert log.last(f"{SITE}/a") == LastSeen("set-cookie", 2.0, 200, ("sid",))
    assert log.last(f"{SITE}/b") is None


def test_a_section_counts_pages_by_their_last_reason_only() -> None:
    log = NotCachedLog()
    log.record("no-freshness", f"{SITE}/a/1", 1.0)
    log.record("cookie", f"{SITE}/a/1", 2.0, details=("x",))
    by_reason = {found["reason"]: found for found in log.snapshot()["reasons"]}
    assert by_reason["no-freshness"]["sections"] == [[f"{SITE}/a/", 1, 0, 0]]
    assert by_reason["cookie"]["sections"] == [[f"{SITE}/a/", 1, 0, 1]]


def test_record_returns_the_details_named_for_the_first_time() -> None:
    log = NotCachedLog()
    assert log.record("cookie", f"{SITE}/", 1.0, details=("a", "b")) == ["a", "b"]
    assert log.record("cookie", f"{SITE}/", 1.0, details=("b", "c")) == ["c"]
    assert dict(log.details("cookie")) == {"a": 1, "b": 2, "c": 1}
    assert log.details("private") == {}


def test_reasons_beyond_the_bound_count_as_other() -> None:
    log = NotCachedLog()
    for number in range(REASONS_KEPT + 5):
        log.record(f"reason-{number}", f"{SITE}/", 1.0)
    reasons = {found["reason"]: found["count"] for found in log.snapshot()["reasons"]}
    assert len(reasons) == REASONS_KEPT + 1 and reasons[OTHER] == 5


def test_details_beyond_the_bound_count_as_other(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(not_cached, "DETAILS_KEPT", 3)
    log = NotCachedLog()
    first = [log.record("cookie", f"{SITE}/", 1.0, details=(f"c{number}",))
             for number in range(6)]
    assert first == [["c0"], ["c1"], ["c2"], [OTHER], [], []]
    assert dict(log.details("cookie")) == {"c0": 1, "c1": 1, "c2": 1, OTHER: 3}


def test_the_oldest_urls_leave_the_last_records_first() -> None:
    log = NotCachedLog()
    for number in range(LAST_KEPT + 2):
        log.record("no-freshness", f"{SITE}/p/{number}", float(number))
    log.record("no-freshness", f"{SITE}/p/2", 99.0)  # recorded again: the newest now
    log.record("no-freshness", f"{SITE}/p/new", 100.0)
    assert log.last(f"{SITE}/p/0") is None and log.last(f"{SITE}/p/1") is None
    assert log.last(f"{SITE}/p/3") is None  # the least recently recorded went
    assert log.last(f"{SITE}/p/2") is not None and log.last(f"{SITE}/p/new") is not None
    [found] = log.snapshot()["reasons"]
    assert found["sections"][0][3] == LAST_KEPT  # pages: the URLs still remembered
    recent = log.recent_urls()
    assert len(recent) == LAST_KEPT and recent[-2:] == [f"{SITE}/p/2", f"{SITE}/p/new"]


def test_long_urls_and_details_are_cut() -> None:
    log = NotCachedLog()
    long_url = f"{SITE}/" + "x" * (2 * TEXT_KEPT)
    log.record("cookie", long_url, 1.0, details=("n" * (2 * TEXT_KEPT),))
    [found] = log.snapshot()["reasons"]
    assert len(found["urls"][0][0]) == TEXT_KEPT and found["urls"][0][0].endswith("…")
    assert all(len(name) == TEXT_KEPT for name in found["details"])
    assert log.last(long_url) is not None  # looked up as it was kept
    assert cut("short") == "short"


def test_a_snapshot_is_reused_while_nothing_was_recorded() -> None:
    log = NotCachedLog()
    log.record("private", f"{SITE}/", 1.0)
    first = log.snapshot()
    assert log.snapshot() is first
    log.record("private", f"{SITE}/", 2.0)
    assert log.snapshot() is not first and log.snapshot()["total"] == 2


records = st.lists(st.tuples(
    st.sampled_from(["no-freshness", "private", "cookie", "set-cookie"]),
    st.sampled_from([f"{SITE}/a/1", f"{SITE}/a/2", f"{SITE}/b", f"{SITE}/"]),
    st.lists(st.sampled_from(["_ga", "sid", "x"]), max_size=2)), max_size=40)


def logged(entries: list[tuple[str, str, list[str]]]) -> NotCachedLog:
    log = NotCachedLog()
    for reason, url, details in entries:
        log.record(reason, url, 1.0, details=details)
    return log


@given(records)
def test_counts_are_exact_and_lists_bounded(entries: list[tuple[str, str, list[str]]]) -> None:
    snapshot = logged(entries).snapshot()
    assert snapshot["total"] == len(entries)
    for found in snapshot["reasons"]:
        assert found["count"] == sum(1 for reason, _, _ in entries if reason == found["reason"])
        assert len(found["urls"]) <= SHOWN and len(found["sections"]) <= SHOWN
        assert sum(count for _, count, _ in found["urls"]) == found["count"]  # 4 URLs fit
    counts = [found["count"] for found in snapshot["reasons"]]
    assert counts == sorted(counts, reverse=True)


@given(records)
def test_one_snapshot_merged_is_itself(entries: list[tuple[str, str, list[str]]]) -> None:
    snapshot = logged(entries).snapshot()
    assert merged([snapshot]) == snapshot


@given(records, records)
def test_merged_snapshots_add_the_processes_up(
        first: list[tuple[str, str, list[str]]], second: list[tuple[str, str, list[str]]]) -> None:
    together = merged([logged(first).snapshot(), logged(second).snapshot()])
    alone = logged(first + second).snapshot()
    assert together["total"] == alone["total"]
    assert {found["reason"]: (found["count"], found["details"], sorted(found["urls"]))
            for found in together["reasons"]} == {
        found["reason"]: (found["count"], found["details"], sorted(found["urls"]))
        for found in alone["reasons"]}  # everything fits: exact

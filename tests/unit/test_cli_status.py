"""``stoker status``'s computations: rates from two samples, the hit ratio, the rows shown,
and the table they make (pure functions, no Stoker running)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from stoker.admin.hit_ratio import total_requests
from stoker.cli.status import (
    Sample,
    counter_rates,
    member_rows,
    plain,
    rate,
    render,
    sections,
    summary,
    warm_progress,
    warm_reads_row,
)

COUNTS = st.integers(min_value=0, max_value=10**12)
SECONDS = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)


def status(**fields: Any) -> dict[str, Any]:
    """A ``GET /api/status`` answer: an idle Stoker, with ``fields`` replaced."""
    return {"origin": "http://127.0.0.1:9000", "origin_down_since": None, "version": "1",
            "requests": {}, "store": {"entries": 2, "bytes": 3 * 1024 * 1024,
                                      "l1_entries": 1, "l1_bytes": 512, "pending": 0,
                                      "pending_bytes": 0, "l2_dropped": 0},
            "pending_l2_writes": 0, "in_flight": 0, "cookie_bypasses": [], "gc": {},
            **fields}


def warm_run(settled: int, total: int) -> dict[str, Any]:
    counts = {"total": total, "warmed": settled, "not_modified": 0, "not_stored": 0,
              "failed": 0, "stopgap_pending": 0, "rewarmed": 0, "gave_up": 0, "skipped": 0,
              "settled": settled, "open": total - settled}
    return {"id": 7, "reason": "manual", "scope": "site", "phase": "warm", "counts": counts}


def rows_of(view: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """``{row name: (value, per second)}`` over every section."""
    return {name: (value, per_second) for _, rows in sections(view)
            for name, value, per_second in rows}


@given(COUNTS, COUNTS, SECONDS)
def test_a_rate_is_never_negative(before: int, after: int, seconds: float) -> None:
    assert rate(before, after, seconds) >= 0


@given(COUNTS, COUNTS, SECONDS)
def test_a_rate_is_the_increase_per_second(before: int, increase: int, seconds: float) -> None:
    assert rate(before, before + increase, seconds) == pytest.approx(increase / seconds)


@given(COUNTS, COUNTS, SECONDS)
def test_a_counter_that_went_down_was_reset_and_counts_from_zero(
        after: int, drop: int, seconds: float) -> None:
    assert rate(after + drop + 1, after, seconds) == pytest.approx(after / seconds)


def test_counter_rates_start_a_new_counter_at_zero() -> None:
    assert counter_rates({"hit": 10}, {"hit": 30, "stale": 4}, 2.0) == {"hit": 10.0,
                                                                         "stale": 2.0}


def test_the_total_counts_each_request_once() -> None:
    requests = {"hit": 5, "stale": 1, "miss": 3, "bypass": 1, "collapsed": 2, "error": 1}
    assert total_requests(requests) == 10  # collapsed and error are among the misses


def test_the_hit_ratio_is_none_before_any_visitors_request() -> None:
    assert summary(Sample(status(), 5.0, 1e9))["hit_ratio"] is None  # an older Stoker
    assert summary(Sample(status(served_by={"warm": 9, "error": 1}), 5.0, 1e9))[
        "hit_ratio"] is None


def test_the_hit_ratio_is_the_visitors_one_and_warm_visits_show_apart() -> None:
    served_by = {"cache": 6, "miss": 1, "uncacheable": 2, "origin_failure": 1, "error": 4,
                 "warm": 30}
    view = summary(Sample(status(requests={"hit": 6, "miss": 31}, served_by=served_by),
                          5.0, 1e9))
    assert view["hit_ratio"] == 0.6  # 6 of 10: warm visits and refusals are not in it
    assert rows_of(view)["hit ratio"] == ("60.0%", "")
    assert rows_of(view)["warm visits (not in the ratio)"] == ("30", "")
    assert rows_of(view)["uncacheable (pass, bypass)"] == ("2", "")


def test_warm_progress_is_known_only_while_a_run_with_urls_is_active() -> None:
    assert warm_progress(status()) is None  # no warmer
    assert warm_progress(status(warm={"active": None})) is None
    assert warm_progress(status(warm={"active": warm_run(0, 0)})) is None
    assert warm_progress(status(warm={"active": warm_run(30, 120)})) == 0.25


def test_one_sample_has_no_rates() -> None:
    view = summary(Sample(status(requests={"hit": 3, "miss": 1},
                                 served_by={"cache": 3, "miss": 1}), 5.0, 1e9))
    assert (view["requests_total"], view["hit_ratio"]) == (4, 0.75)
    assert view["requests_per_second"] is view["request_rates"] is view["sampled_over"] is None
    assert rows_of(view)["hit"] == ("3", "—")
    assert rows_of(view)["all"] == ("4", "—")


def test_two_samples_give_the_rates_between_them_and_keep_the_status_as_fetched() -> None:
    fetched = status(requests={"hit": 30, "miss": 5, "collapsed": 2},
                     served_by={"cache": 30, "miss": 5})
    view = summary(Sample(fetched, 12.0, 1e9), Sample(status(requests={"hit": 10}), 10.0, 1e9))
    assert {key: view[key] for key in fetched} == fetched
    assert view["sampled_over"] == 2.0
    assert view["requests_per_second"] == 12.5
    assert view["request_rates"] == {"hit": 10.0, "stale": 0.0, "miss": 2.5, "bypass": 0.0,
                                     "collapsed": 1.0}
    rows = rows_of(view)
    assert (rows["hit"], rows["miss"], rows["all"]) == (("30", "10.0"), ("5", "2.5"),
                                                        ("35", "12.5"))
    assert rows["hit ratio"] == ("85.7%", "")
    assert rows["collapsed (among the above)"] == ("2", "1.0")


def test_a_restarted_stoker_shows_no_negative_rate() -> None:
    view = summary(Sample(status(requests={"hit": 4}), 11.0, 1e9),
                   Sample(status(requests={"hit": 900, "miss": 50}), 10.0, 1e9))
    assert view["requests_per_second"] == 4.0
    assert view["request_rates"]["hit"] == 4.0 and view["request_rates"]["miss"] == 0.0


def test_the_rows_without_requests_show_no_ratio_and_an_idle_origin() -> None:
    rows = rows_of(summary(Sample(status(), 0.0, 1e9)))
    assert [rows[kind][0] for kind in ("hit", "stale", "miss", "bypass", "all")] == ["0"] * 5
    assert rows["hit ratio"] == ("—", "")
    assert rows["state"] == ("up", "")
    assert rows["in flight"] == ("0", "")
    assert rows["L1 memory"] == ("1 entry, 512 B", "")
    assert rows["L2 SQLite"] == ("2 entries, 3.0 MiB", "")
    assert "L2 writes dropped" not in rows
    assert [title for title, _ in sections(summary(Sample(status(), 0.0, 1e9)))] == [
        "requests", "origin", "cache"]


def test_a_redis_tier_is_named_redis() -> None:
    rows = rows_of(summary(Sample(status(l2_tier="Redis"), 0.0, 1e9)))
    assert rows["L2 Redis"] == ("2 entries, 3.0 MiB", "") and "L2 SQLite" not in rows


def test_a_down_origin_shows_for_how_long() -> None:
    view = summary(Sample(status(origin_down_since=1000.0, in_flight=3), 0.0, 1192.5))
    assert view["origin_down_for"] == 192.5
    assert rows_of(view)["state"] == ("down for 3m 12s", "")
    assert rows_of(view)["in flight"] == ("3", "")


def test_an_active_warm_run_has_its_section() -> None:
    view = summary(Sample(status(warm={"active": warm_run(30, 120)}), 0.0, 1e9))
    assert view["warm_progress"] == 0.25
    rows = rows_of(view)
    assert rows["run"] == ("7 (manual, site): warm", "")
    assert rows["settled"] == ("30/120 (25.0%)", "")
    assert [rows[name] for name in ("warmed", "not modified", "not stored", "failed")] == [
        ("30", ""), ("0", ""), ("0", ""), ("0", "")]
    assert sections(view)[-1][0] == "warm"


def test_the_skipped_reasons_and_the_last_runs_warning_are_shown() -> None:
    active = warm_run(1, 3)
    active["counts"]["skipped"] = 54
    active["skipped_reasons"] = {"other_host": 50, "feed": 4}
    last = {**warm_run(1, 1), "id": 6, "phase": "done", "skipped_reasons": {"admin": 2},
            "warning": "found only 1 URL (2 skipped (admin: 2))"}
    last["counts"] = {**last["counts"], "skipped": 2}
    rows = rows_of(summary(Sample(status(warm={"active": active, "last": last}), 0.0, 1e9)))
    assert rows["skipped"] == ("54 (other_host: 50, feed: 4)", "")
    assert rows["last run"] == ("6 (manual, site): done, 1 URL, 1 warmed", "")
    assert rows["last run skipped"] == ("2 (admin: 2)", "")
    assert rows["last run warning"] == ("found only 1 URL (2 skipped (admin: 2))", "")
    alone = rows_of(summary(Sample(status(warm={"active": None, "last": last}), 0.0, 1e9)))
    assert "run" not in alone and "skipped" not in alone and "last run warning" in alone
    quiet = rows_of(summary(Sample(status(warm={"active": warm_run(0, 0)}), 0.0, 1e9)))
    assert "skipped" not in quiet and "last run" not in quiet


def test_dropped_l2_writes_are_shown_when_there_are_some() -> None:
    store = {**status()["store"], "l2_dropped": 12}
    assert rows_of(summary(Sample(status(store=store), 0.0, 1e9)))["L2 writes dropped"] == (
        "12", "")


def test_the_table_prints_every_cell_as_it_is() -> None:
    console = Console(record=True, width=100, markup=True)
    view = summary(Sample(status(origin="http://[::1]:9000", requests={"hit": 3}), 1.0, 1e9))
    console.print(render(view, title="stoker at http://[bold]x", caption="over 1.0 s"))
    shown = console.export_text()
    assert "stoker at http://[bold]x" in shown
    assert "http://[::1]:9000" in shown
    lines = [line.split() for line in shown.splitlines()]
    assert ["requests", "│", "hit", "│", "3", "│", "—"] in lines
    assert "over 1.0 s" in shown


def test_the_members_sharing_the_cache_get_a_row_each() -> None:
    view = {"members": [{"name": "web-1/0", "confirmed": 7, "seen_at": 1.0, "live": True},
                        {"name": "web-2", "confirmed": 5, "seen_at": 0.0, "live": False}]}
    assert member_rows(view) == [("web-1/0", "live", "purge 7"), ("web-2", "gone", "purge 5")]
    assert member_rows({}) == []
    said = {"name": "web-3", "confirmed": 9, "seen_at": 2.0, "live": True, "release": "0.1.0",
            "hit_ratio": 0.931, "l1_entries": 120, "l1_bytes": 2048}
    assert member_rows({"members": [said]}) == [
        ("web-3", "live, hits 93.1%, L1 120 entries, 2.0 KiB", "purge 9 0.1.0")]


def test_the_warmed_entries_visitors_read_show_with_their_share_once_any_was_stored() -> None:
    assert warm_reads_row({}) == []
    assert warm_reads_row({"warm_reads": {"stored": 0, "read": 0}}) == []
    assert warm_reads_row({"warm_reads": {"stored": 40, "read": 10}}) == [
        ("warmed entries read", "10 of 40 stored (25.0%)", "")]


def test_refresh_ahead_shows_in_the_warm_section_while_on() -> None:
    refresh = {"tracked": 1200, "refreshed": 4, "not_modified": 380, "failed": 2}
    view = summary(Sample(status(refresh_ahead=refresh), 0.0, 1e9))
    assert rows_of(view)["refresh ahead"] == (
        "1,200 read, 4 refreshed, 380 not modified, 2 failed", "")
    assert "refresh ahead" not in rows_of(summary(Sample(status(refresh_ahead=None), 0.0, 1e9)))


def test_the_plain_view_is_a_whole_line_per_row_with_no_escape_or_border() -> None:
    before = Sample(status(requests={"hit": 1}), 0.0, 1e9)
    after = Sample(status(origin="http://[bold]x", requests={"hit": 3, "miss": 1}), 2.0, 1e9)
    shown = plain(summary(after, before), title="stoker at x", caption="rates over 2.0 s")
    lines = shown.splitlines()
    assert (lines[0], lines[-1]) == ("stoker at x", "rates over 2.0 s")
    assert "requests  hit    " in lines[1] and lines[1].endswith("  3  1.0/s")
    assert any(line.startswith("origin    url") and line.endswith("  http://[bold]x")
               for line in lines)
    assert not any(char in shown for char in "\x1b│─━")
    assert len(lines) == 2 + sum(len(rows) for _, rows in sections(summary(after, before)))

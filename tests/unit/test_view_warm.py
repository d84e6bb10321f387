"""The Warm page's pure renderers: pace (rate, ETA), the progress, the map (one cell per
URL, capped, hover text), the reasons, the recent runs; hostile values escaped."""

from __future__ import annotations

import re
from typing import Any

import pytest

from stoker.admin.views.warm import (
    listed,
    map_html,
    origins_html,
    pace,
    progress_html,
    reasons_html,
    recent_html,
    state_counts,
    urls_html,
    warm_html,
)
from stoker.warm.run import URL_STATES

NOW = 1_700_000_000.0
EVIL = "http://www.example.test/<script>alert(1)</script>"


def counts(**given: int) -> dict[str, int]:
    names = ("total", "warmed", "not_modified", "not_stored", "failed", "stopgap_pending",
             "rewarmed", "gave_up", "skipped")
    out = {name: given.get(name, 0) for name in names}
    out["settled"] = sum(out[n] for n in ("warmed", "not_modified", "not_stored", "failed",
                                          "rewarmed", "gave_up"))
    out["open"] = out["total"] - out["settled"]
    return out


def run(phase: str = "warm", started: float = NOW - 10, finished: float | None = None,
        error: str | None = None, **tallies: int) -> dict[str, Any]:
    return {"id": 7, "reason": "manual", "scope": "site", "phase": phase, "started_at": started,
            "finished_at": finished, "error": error, "counts": counts(**tallies)}


LISTING: dict[str, Any] = {"active": None, "recent": [], "seen_origins": [],
                           "warmed_origins": ["http://www.example.test"], "origin_findings": [],
                           "warm_reads": {"stored": 0, "read": 0}}


def detail(**given: Any) -> dict[str, Any]:
    return {**run(**given), "failed_urls": [], "skipped_reasons": {}, "not_stored_reasons": {},
            "not_stored_urls": {}, "warning": None}


@pytest.mark.parametrize(("shown_run", "expected"), [
    (run(total=100, warmed=20), (2.0, 40.0)),  # 20 in 10 s; 80 open at 2/s
    (run(total=100), (None, None)),  # nothing settled yet: unknown
    (run(phase="collect"), (None, None)),
    (run(started=NOW), (None, None)),  # no time elapsed
    (run(phase="done", finished=NOW - 5, total=10, warmed=10), (2.0, None)),  # ended: no ETA
])
def test_pace_is_the_settled_rate_and_the_open_urls_at_that_rate(
        shown_run: dict[str, Any], expected: tuple[float | None, float | None]) -> None:
    assert pace(shown_run, NOW) == expected


def test_progress_shows_the_bar_the_rate_and_the_eta() -> None:
    html = progress_html(run(total=100, warmed=15, rewarmed=5, not_stored=3), NOW)
    assert '<progress id="warm-progress" value="23" max="100">' in html
    assert "23 of 100 URLs settled (23.0 %)" in html
    assert "2.3 URLs/s" in html and "<dt>ETA</dt><dd>33 s</dd>" in html
    assert "<dt>Warmed</dt><dd>20</dd>" in html  # warmed on a revisit counts as warmed


def test_progress_while_collecting_is_indeterminate_and_eta_unknown() -> None:
    html = progress_html(run(phase="collect"), NOW)
    assert '<progress id="warm-progress"></progress>' in html
    assert "<dt>Rate</dt><dd>—</dd>" in html and "<dt>ETA</dt><dd>—</dd>" in html


def test_an_ended_run_says_how_long_it_took_and_why_it_failed() -> None:
    html = progress_html(run(phase="failed", finished=NOW - 50, started=NOW - 250,
                             error="<b>robots.txt</b> unreachable"), NOW)
    assert "<dt>Took</dt><dd>3 min</dd>" in html and "ETA" not in html
    assert "&lt;b&gt;robots.txt&lt;/b&gt; unreachable" in html


def test_a_run_waiting_to_discover_again_says_why() -> None:
    waiting = "discovery failed (try 2): http://s/robots.txt: the origin answered 502; " \
              "trying again in 60 s"
    html = progress_html(run(phase="collect", error=waiting), NOW)
    assert waiting in html and "finding the site&#x27;s URLs" in html
    assert "class=\"error\"" not in progress_html(run(phase="cancelled", error="superseded",
                                                     finished=NOW), NOW)


def test_state_counts_split_the_open_urls_into_queued_and_stopgap() -> None:
    tallied = state_counts(counts(total=10, warmed=3, stopgap_pending=2, gave_up=1))
    assert set(tallied) == set(URL_STATES)
    assert (tallied["queued"], tallied["stopgap"], tallied["warmed"]) == (4, 2, 3)
    assert sum(tallied.values()) == 10


def test_the_map_has_one_cell_per_url_in_url_order_with_url_and_state_on_hover() -> None:
    html = map_html({"warmed": ["http://s/b"], "queued": ["http://s/a", "http://s/c"],
                     "failed": [EVIL]}, counts(total=4, warmed=1, failed=1))
    cells = re.findall(r'<span class="cell s-(\w+)" title="([^"]*)"', html)
    assert cells == [("queued", "http://s/a — queued"), ("warmed", "http://s/b — warmed"),
                     ("queued", "http://s/c — queued"),
                     ("failed", "http://www.example.test/&lt;script&gt;alert(1)&lt;/script&gt;"
                      " — failed")]
    assert "<script>" not in html
    assert "4 URLs" in html and "shown" not in html
    assert "queued <strong>2</strong>" in html and "gave up <strong>0</strong>" in html


def test_the_map_orders_numbers_in_urls_by_value() -> None:
    html = map_html({"warmed": ["http://s/page/10", "http://s/page/2"],
                     "queued": ["http://s/page/1", "http://s/"]}, counts(total=4, warmed=2))
    assert re.findall(r'title="http://s/([^ ]*) ', html) == ["", "page/1", "page/2", "page/10"]


def test_the_map_caps_its_cells_and_says_so() -> None:
    urls = [f"http://s/{n:04}" for n in range(30)]
    html = map_html({"queued": urls}, counts(total=5000), most=20)
    assert html.count('title="') == 20 and "20 of 5 000 URLs shown" in html
    assert 'title="http://s/0019 — queued"' in html and "http://s/0020" not in html


def test_reasons_list_a_few_urls_each_and_how_many_more() -> None:
    html = reasons_html({"set-cookie": 12, "": 1}, {"set-cookie": ["http://s/a", EVIL],
                                                    "": ["http://s/x"]})
    assert "<strong>set-cookie</strong>: 12 URLs and 10 more" in html
    assert "<li>http://s/a</li>" in html and "&lt;script&gt;" in html and "<script>" not in html
    assert "<strong>no reason given</strong>: 1 URL<ul" in html
    assert reasons_html({}, {}) == ""


def test_recent_runs_show_phase_duration_and_counts() -> None:
    html = recent_html([run(phase="done", finished=NOW - 60, started=NOW - 180, total=60,
                            warmed=58, not_stored=1, failed=1),
                        run(total=3)], NOW)
    assert "took 2 min" in html and "60 URLs: 58 warmed, 1 not stored, 1 failed" in html
    assert '<span class="tag ok">done</span>' in html
    assert '<span class="tag running">warming</span>' in html
    assert "no warm run yet" in recent_html([], NOW)


def test_the_page_without_a_run_invites_to_start_one_forms_outside_the_live_region() -> None:
    html = warm_html(LISTING, None, None, NOW)
    live = html.index("<div data-live>")
    assert "No warm run yet" in html[live:]
    assert html.index('data-api="/api/warm" data-body="{}" data-replace') < live
    assert html.index('<textarea name="urls"') < live and 'data-list' in html
    assert 'id="live"' in html


def test_the_page_offers_cancel_only_while_the_run_is_active() -> None:
    going = warm_html(LISTING, detail(total=2), {"states": {}}, NOW)
    ended = warm_html(LISTING,
                      detail(phase="done", finished=NOW, total=1, warmed=1), {"states": {}}, NOW)
    assert 'data-api="/api/warm/7/cancel"' in going and "data-confirm=" in going
    assert "Current run #7" in going
    assert "/cancel" not in ended and "Latest run #7" in ended


def test_an_ended_run_shows_its_warning_and_why_urls_were_skipped() -> None:
    warned = {**detail(phase="done", finished=NOW, total=1, warmed=1, skipped=54),
              "skipped_reasons": {"other_host": 50, "<feed>": 4},
              "warning": "found only 1 URL (54 skipped (other_host: 50, <feed>: 4))"}
    html = warm_html(LISTING, warned, {"states": {}}, NOW)
    assert '<p class="notice" id="warm-warning"><strong>Warning:</strong> this run found ' \
        "only 1 URL" in html
    assert "<strong>other_host</strong>: 50</li><li><strong>&lt;feed&gt;</strong>: 4" in html
    assert "<feed>" not in html
    going = {**warned, "phase": "warm", "finished_at": None}
    assert "warm-warning" not in warm_html(LISTING, going,
                                           {"states": {}}, NOW)
    quiet = warm_html(LISTING,
                      detail(phase="done", finished=NOW, total=2, warmed=2), {"states": {}}, NOW)
    assert "warm-warning" not in quiet and "warm-skipped" not in quiet


def test_the_origins_section_says_what_is_warmed_what_visitors_use_and_what_they_read() -> None:
    listing = {**LISTING, "seen_origins": [
        {"origin": "https://www.example.test", "visits": 1200, "last_seen": NOW - 30},
        {"origin": "", "visits": 3, "last_seen": NOW - 60}],
        "warmed_origins": ["http://www.example.test", "https://www.example.test"],
        "origin_findings": ["visitors arrive on <b>https://www.example.test</b>"],
        "warm_reads": {"stored": 40, "read": 10}}
    html = origins_html(listing, NOW)
    assert '<p class="notice">visitors arrive on &lt;b&gt;' in html
    assert "http://www.example.test, https://www.example.test" in html
    assert "10 of 40 (25.0 %)" in html
    assert "other hosts (not the site&#x27;s)" in html
    assert re.search(r"https://www\.example\.test</td>.*?1 200.*?yes", html, re.S)


def test_the_origins_section_before_any_visitor() -> None:
    html = origins_html(LISTING, NOW)
    assert "no visitor counted yet" in html and "none stored yet" in html
    assert "notice" not in html


def test_a_rewarm_names_its_urls_with_their_results_the_first_few_and_how_many_more() -> None:
    states = {"warmed": [f"https://s.test/page/{n}" for n in (10, 2)],
              "failed": [EVIL], "queued": ["https://s.test/page/1"]}
    out = urls_html(states, counts(total=30, warmed=2, failed=1), most=3)
    rows = re.findall(r'<td data-label="URL"><span class="detail">(.*?)</span></td>'
                      r'<td data-label="Result"><span class="tag (\w*)">(.*?)</span>', out)
    assert rows == [("http://www.example.test/&lt;script&gt;alert(1)&lt;/script&gt;", "failed",
                     "failed"), ("https://s.test/page/1", "running", "queued"),
                    ("https://s.test/page/2", "ok", "warmed")]
    assert "and 27 more URLs" in out
    every = urls_html({"not_stored": ["https://s.test/a"]}, counts(total=1, not_stored=1))
    assert 'class="tag ">not stored' in every and "more URL" not in every


def test_only_rewarms_and_url_lists_are_named_on_the_page() -> None:
    assert listed({**run(), "reason": "purge"}) and listed({**run(), "reason": "edit"})
    assert listed({**run(), "scope": "urls"})
    assert not listed(run())  # a manual run of the whole site: counts and the map
    states = {"states": {"warmed": ["https://s.test/page/7"]}}
    rewarm = warm_html(LISTING, {**detail(total=1, warmed=1), "reason": "edit",
                                 "scope": "urls"}, states, NOW)
    site = warm_html(LISTING, detail(total=1, warmed=1), states, NOW)
    assert 'id="warm-urls"' in rewarm and "https://s.test/page/7</span>" in rewarm
    assert 'id="warm-urls"' not in site

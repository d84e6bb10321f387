"""The status compose's pure parts: outcomes kept apart, shares, node lines."""

from __future__ import annotations

import json

from stoker.admin.status import cold_json, fractions, outcome_rows, said_figures, shares
from stoker.schedule.store import Deadline

OUTCOMES = {("hit", "", False): 6, ("stale-while-revalidate", "", False): 1,
            ("miss", "", False): 2, ("bypass", "cookie", False): 3,
            ("pass", "no-freshness", False): 1, ("error", "bad-request", False): 1,
            ("error", "origin-down", False): 2,
            ("miss", "", True): 9, ("bypass", "rule", False): 0}


def test_shares_count_visitors_by_where_the_body_came_from() -> None:
    assert shares(OUTCOMES) == {"cache": 7, "origin": 6, "miss": 2, "uncacheable": 4,
                                "origin_failure": 2, "error": 1, "warm": 9}
    assert fractions(shares(OUTCOMES)) == {"cache": 0.4667, "origin": 0.4,
                                           "origin_failure": 0.1333}  # of 15: no refusal
    assert fractions(shares({})) == {"cache": 0.0, "origin": 0.0, "origin_failure": 0.0}


def test_outcomes_stay_apart_by_kind_reason_and_source() -> None:
    rows = outcome_rows(OUTCOMES)
    assert rows[0] == {"kind": "miss", "reason": "", "source": "warmer", "count": 9}
    keys = {(r["kind"], r["reason"], r["source"]) for r in rows}
    assert ("bypass", "cookie", "visitor") in keys and ("pass", "no-freshness", "visitor") in keys
    assert ("bypass", "rule", "visitor") not in keys  # nothing counted: no row
    assert len(rows) == 8


def test_a_member_line_from_what_it_said_or_none() -> None:
    said = json.dumps({"outcomes": [["hit", "", False, 4], ["miss", "", False, 1]],
                       "origin_up": True, "timing": {"counts": [1] + [0] * 14, "failures": 2}})
    line = said_figures(said)
    assert line is not None and (line["cache"], line["origin"], line["origin_failures"]) == (
        4, 1, 2)
    assert line["origin_up"] and line["origin_p50"] is not None
    assert said_figures("{}") is None and said_figures("not json") is None


def test_cold_now_names_a_few_pending_urls_and_the_warm_deadline_due_first() -> None:
    deadlines = [Deadline("stats-flush", due_at=5.0), Deadline("refresh", due_at=900.0),
                 Deadline("rewarm", due_at=60.0), Deadline("recover")]
    assert cold_json(12, ["https://s/a", "https://s/b"], deadlines) == {
        "pending": 12, "urls": ["https://s/a", "https://s/b"],
        "next_warm": {"name": "rewarm", "due_at": 60.0}}  # stats-flush warms nothing
    assert cold_json(0, [], [Deadline("recover")])["next_warm"] is None  # not armed


def test_a_member_line_has_its_own_hit_ratio() -> None:
    said = json.dumps({"outcomes": [["hit", "", False, 3], ["miss", "", False, 1],
                                    ["miss", "", True, 50]],
                       "origin_up": True, "timing": {"counts": [0] * 15, "failures": 0}})
    line = said_figures(said)
    assert line is not None and line["hit_ratio"] == 0.75  # its warm visits apart

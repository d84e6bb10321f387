"""The Why-not-cached and Schedule pages, rendered from their API's JSON: every figure,
the advice with its stoker.toml lines, escaping of what origins and clients sent."""

from __future__ import annotations

from typing import Any

from stoker.admin.views.html import Markup
from stoker.admin.views.schedule import outcome, schedule_html
from stoker.admin.views.why import prose, report_html, url_html, why_html
from stoker.admin.why import NOT_REQUESTED

NOW = 1_800_000_000.0


def reason(**overrides: Any) -> dict[str, Any]:
    return {"reason": "no-freshness", "description": "no lifetime", "count": 128,
            "share": 0.4, "details": [{"name": "200", "count": 128}],
            "urls": [{"url": "https://s.test/blog/<x>", "count": 9, "error": 0}],
            "sections": [{"section": "/blog/", "count": 128, "error": 0, "pages": 40}],
            "advice": [{"kind": "change", "text": "128 pages under /blog/ had no freshness: "
                        "add `ttl`", "config": '[[rule]]\npath = "/blog/"\nttl = "5m"',
                        "about": {"path": "/blog/"}}], **overrides}


def test_the_report_shows_counts_shares_urls_and_the_rule_that_fixes_them() -> None:
    out = report_html({"requests": 320, "not_cached": 128, "processes": ["a", "b"],
                       "reasons": [reason()]})
    assert "<strong>128</strong>" in out and "<strong>320</strong>" in out and "a, b" in out
    assert "128 · 40.0 % of requests" in out and "/blog/ (128)" in out and "200 (128)" in out
    assert "https://s.test/blog/&lt;x&gt;" in out and "<x>" not in out
    assert '<pre class="config"><code>[[rule]]\npath = &quot;/blog/&quot;' in out
    assert "add <code>ttl</code>" in out and "make it cacheable" in out


def test_an_empty_report_says_everything_was_cached() -> None:
    out = report_html({"requests": 3, "not_cached": 0, "processes": ["a"], "reasons": []})
    assert "Everything asked for so far was cached." in out


def test_back_quotes_become_code_and_a_lone_one_stays_text() -> None:
    assert prose("add `a<b` to `strip_cookies`") == \
        "add <code>a&lt;b</code> to <code>strip_cookies</code>"
    assert prose("it`s <odd>") == "it`s &lt;odd&gt;"


def test_a_url_verdict_gives_the_last_record_and_its_advice() -> None:
    out = url_html({"url": "https://s.test/p?<q>", "cached": False, "seen": True,
                    "verdict": "not cached: the response sets a cookie (set-cookie)",
                    "last": {"reason": "set-cookie", "description": "sets a cookie",
                             "at": NOW - 30, "seen_by": "node-1", "status": 200,
                             "details": []},
                    "advice": [{"kind": "right", "text": "right", "config": None}]}, NOW)
    assert "https://s.test/p?&lt;q&gt;" in out and 'class="tag failed"' in out
    assert "30 s ago" in out and "node-1" in out and "right not to cache" in out
    cached = url_html({"url": "u", "cached": True, "seen": True, "verdict": "cached: 1 variant",
                       "last": None, "advice": []}, NOW)
    assert 'class="tag ok"' in cached and "Last:" not in cached


def test_a_url_not_requested_yet_is_said_calmly_not_as_a_failure() -> None:
    out = url_html({"url": "u", "cached": False, "seen": False, "verdict": NOT_REQUESTED,
                    "last": None, "advice": []}, NOW)
    assert f'<span class="detail">{NOT_REQUESTED}</span>' in out
    assert 'class="tag' not in out


def test_the_why_page_keeps_the_asked_url_in_its_form_escaped() -> None:
    out = why_html({"requests": 0, "not_cached": 0, "processes": ["a"], "reasons": []},
                   '"><script>', Markup(""))
    assert 'value="&quot;&gt;&lt;script&gt;"' in out and "<div data-live>" in out


def deadline(**overrides: Any) -> dict[str, Any]:
    return {"name": "rewarm", "due_at": NOW + 120, "first_armed_at": None,
            "completed_at": NOW - 60, "last_error": None, "attempts": 0, "owner": None,
            "claimed_until": None, **overrides}


def test_the_schedule_says_when_each_deadline_is_due_and_how_it_last_went() -> None:
    out = schedule_html([deadline(), deadline(name="refresh", due_at=None, completed_at=None),
                         deadline(name="odd<name>")], NOW)
    assert "Re-warm what purges and edits made cold" in out and "in 2 min" in out
    assert "1 min ago" in out and "not armed" in out and "not run yet" in out
    assert "odd&lt;name&gt;" in out and "<name>" not in out


def test_a_deadline_outcome_is_running_failed_or_ok() -> None:
    assert "running on w-1" in outcome(deadline(owner="w-1", claimed_until=NOW + 5), NOW)
    failed = outcome(deadline(last_error="boom <b>", attempts=2), NOW)
    assert "failed (2 tries)" in failed and "boom &lt;b&gt;" in failed
    assert "failed (1 try)" in outcome(deadline(last_error="x", attempts=1), NOW)
    assert ">ok<" in outcome(deadline(), NOW)
    assert "running" not in outcome(deadline(owner="w-1", claimed_until=NOW - 1), NOW)

"""``stoker why``'s view: the lines and table it prints from ``GET /api/why``'s answer."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from stoker.cli.why import reason_lines, report_table, url_lines

SITE = "https://www.example.com"
REPORT: dict[str, Any] = {
    "requests": 200, "not_cached": 130, "processes": ["node/0", "node/1"],
    "reasons": [{
        "reason": "no-freshness", "description": "no lifetime", "count": 128, "share": 0.64,
        "details": [],
        "urls": [{"url": f"{SITE}/blog/{n}", "count": 10 - n, "error": 0} for n in range(5)],
        "sections": [],
        "advice": [{"kind": "change", "text": "128 responses under /blog/ had no freshness",
                    "config": '[[rule]]\npath = "/blog/"\nttl = "5m"\n', "about": {}}],
    }, {
        "reason": "cookie", "description": "cookies", "count": 2, "share": 0.01,
        "details": [{"name": n, "count": 2} for n in ("_ga", "a", "b", "c")],
        "urls": [{"url": f"{SITE}/n", "count": 2, "error": 0}], "sections": [],
        "advice": [{"kind": "right", "text": "fine", "config": None, "about": {}}],
    }]}


def printed(table: Any) -> str:
    console = Console(width=120, markup=False)
    with console.capture() as capture:
        console.print(table)
    return capture.get()


def test_a_reason_lists_its_top_urls_then_its_advice() -> None:
    assert reason_lines(REPORT["reasons"][0], urls=2) == [
        "no-freshness (128)", f"  {SITE}/blog/0 (10)", f"  {SITE}/blog/1 (9)",
        "  … and 3 more URLs", "  change: 128 responses under /blog/ had no freshness"]
    assert reason_lines(REPORT["reasons"][1], urls=3) == [
        "cookie (2)", f"  {SITE}/n (2)", "  right as is: fine"]


def test_the_table_has_a_row_per_reason_with_its_commonest_details() -> None:
    text = printed(report_table(REPORT, title="stoker at x: why not cached"))
    assert "stoker at x: why not cached" in text
    assert "130 of 200 requests not cached; processes: node/0, node/1" in text
    row = next(line for line in text.splitlines() if "cookie" in line)
    assert "1.0%" in row and "cookies: _ga (2), a (2), b (2)" in row and "c (2)" not in row
    assert "[[rule]]" not in text  # advice comes below, never read as markup


def test_one_url_shows_its_verdict_last_record_variants_and_advice() -> None:
    found = {"url": f"{SITE}/a", "verdict": "not cached: cookies (cookie)",
             "last": {"reason": "cookie", "status": 200, "details": ["_ga", "x"],
                      "seen_by": "node/0"},
             "variants": [{"variant": "", "state": "stale", "ttl": -3.0, "tier": ["l2"]}],
             "advice": [{"kind": "origin", "text": "send max-age"}]}
    assert url_lines(found) == [
        f"{SITE}/a: not cached: cookies (cookie)",
        "  last not cached: status 200; _ga, x; seen by node/0",
        "  variant -: stale, ttl -3s, l2",
        "  at the origin: send max-age"]
    assert url_lines({**found, "last": None, "variants": [], "advice": []}) == [
        f"{SITE}/a: not cached: cookies (cookie)"]

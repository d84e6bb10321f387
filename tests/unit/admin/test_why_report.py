"""The ``/api/why`` report as pure functions of the figures and the configuration."""

from __future__ import annotations

from typing import Any

from stoker.admin.hit_ratio import total_requests
from stoker.admin.why import (
    DESCRIPTIONS,
    NOT_REQUESTED,
    cookie_bypass_report,
    describe,
    origins_seen,
    report,
    seen_only,
    split_origin,
    stored_urls,
    url_report,
)
from stoker.admin.why_advice import Site
from stoker.cache.not_cached import LastSeen, NotCachedLog

SITE = "https://www.example.com"


def test_the_report_lists_each_reason_with_its_share_details_urls_and_advice() -> None:
    log = NotCachedLog()
    for number in range(3):
        log.record("no-freshness", f"{SITE}/blog/{number}", 1.0, status=200)
    log.record("cookie", f"{SITE}/news/", 2.0, details=("_ga",))
    shown = report(log.snapshot(), Site(requests=8), ["node/0", "node/1"])
    assert (shown["requests"], shown["not_cached"], shown["processes"]) == (
        8, 4, ["node/0", "node/1"])
    fresh, cookie = shown["reasons"]
    assert fresh["reason"] == "no-freshness" and fresh["share"] == 0.375
    assert fresh["description"] == DESCRIPTIONS["no-freshness"]
    assert fresh["urls"][0] == {"url": f"{SITE}/blog/0", "count": 1, "error": 0}
    assert fresh["sections"] == [{"section": f"{SITE}/blog/", "count": 3, "error": 0,
                                  "pages": 3}]
    assert fresh["advice"][0]["config"] == '[[rule]]\npath = "/blog/"\nttl = "5m"\n'
    assert cookie["details"] == [{"name": "_ga", "count": 1}]
    assert cookie["advice"][0]["about"] == {"cookie": "_ga", "requests": 1, "share": 0.125}


def test_without_requests_shares_are_zero() -> None:
    log = NotCachedLog()
    log.record("private", f"{SITE}/", 1.0)
    assert report(log.snapshot(), Site(), ["me"])["reasons"][0]["share"] == 0.0


def key(*stored_at: float) -> dict[str, Any]:
    return {"url": f"{SITE}/a", "key": "1#https://www.example.com/a",
            "variants": [{"variant": "", "stored_at": at, "state": "fresh", "ttl": 60.0,
                          "tier": ["l1", "l2"]} for at in stored_at]}


def test_a_url_stored_after_its_last_refusal_is_cached() -> None:
    found = url_report(f"{SITE}/a", key(20.0), LastSeen("no-freshness", 10.0, 200), "me",
                       Site())
    assert found["cached"] is True and found["verdict"] == "cached: 1 variant"
    assert found["advice"] == [] and found["last"]["seen_by"] == "me"


def test_a_url_refused_last_is_not_cached_and_gets_the_advice_for_its_section() -> None:
    found = url_report(f"{SITE}/blog/x", {"key": "k", "variants": []},
                       LastSeen("no-freshness", 10.0, 200), "me", Site())
    assert found["cached"] is False
    assert found["verdict"] == f"not cached: {DESCRIPTIONS['no-freshness']} (no-freshness)"
    assert found["last"] == {"reason": "no-freshness", "at": 10.0, "status": 200,
                             "details": [], "description": DESCRIPTIONS["no-freshness"],
                             "seen_by": "me"}
    assert found["advice"][0]["config"] == '[[rule]]\npath = "/blog/"\nttl = "5m"\n'


def test_a_url_refused_after_it_was_stored_is_not_cached_now() -> None:
    found = url_report(f"{SITE}/a", key(5.0), LastSeen("set-cookie", 10.0, 200, ("sid",)),
                       "me", Site())
    assert found["cached"] is False and found["verdict"].startswith("not cached: the response")
    assert [advice["kind"] for advice in found["advice"]] == ["right"]


def test_a_url_never_seen_says_so() -> None:
    found = url_report(f"{SITE}/a", {"key": "k", "variants": []}, None, "me", Site())
    assert (found["cached"], found["seen"], found["last"], found["advice"]) == (
        False, False, None, [])
    assert found["verdict"] == NOT_REQUESTED


def test_a_lookup_shows_the_urls_seen_and_every_one_only_when_none_was() -> None:
    never = url_report(f"{SITE}/a", {"key": "k1", "variants": []}, None, "me", Site())
    refused = url_report("http://localhost:8080/a", {"key": "k2", "variants": []},
                         LastSeen("private", 3.0, 200), "me", Site())
    stored = url_report("https://127.0.0.1:8080/a", key(5.0), None, "me", Site())
    assert (refused["seen"], stored["seen"]) == (True, True)
    assert seen_only([never, refused, never, stored]) == [refused, stored]
    assert seen_only([never, never]) == [never, never]
    assert seen_only([]) == []


def test_an_unknown_reason_is_described_by_its_name() -> None:
    assert describe("brand-new") == "brand-new"


def test_cookie_bypasses_are_ranked_with_their_share_of_all_requests() -> None:
    stats = {"hit": 5, "miss": 3, "bypass": 2, "collapsed": 7}
    assert total_requests(stats) == 10
    assert cookie_bypass_report({"b": 2, "a": 2, "_ga": 5}, stats) == [
        {"cookie": "_ga", "requests": 5, "share": 0.5},
        {"cookie": "a", "requests": 2, "share": 0.2},
        {"cookie": "b", "requests": 2, "share": 0.2}]
    assert cookie_bypass_report({"a": 1}, {})[0]["share"] == 0.0


def test_the_origins_a_path_was_seen_on_are_those_of_urls_with_exactly_that_path() -> None:
    urls = ["http://a:1/p?x=1", "https://b/p?x=1", "http://c/q/p?x=1", "http://a:1/p?x=1",
            "http://d/p?x=12", "http://e/p?x=1"]
    assert origins_seen(urls, "/p?x=1", 16) == ["http://a:1", "https://b", "http://e"]
    assert origins_seen(urls, "/p?x=1", 2) == ["http://a:1", "https://b"]
    assert origins_seen([], "/p", 16) == []
    assert split_origin("https://h:8443/a/b?c") == ("https://h:8443", "/a/b?c")


def test_stored_urls_are_those_of_the_current_cache_version() -> None:
    keys = ["3|http://a/p", "2|http://b/p", "3|https://c/p?q", "30|http://d/p"]
    assert list(stored_urls(keys, "3")) == ["http://a/p", "https://c/p?q"]

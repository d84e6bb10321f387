"""Tests for stoker.http.policy.decide_storage.

RFC 9111 §3 (storing), §3.5 (Authorization), §4.2 (freshness), §5.2 (directives),
RFC 5861 (stale-while-revalidate / stale-if-error), RFC 9213 (CDN-Cache-Control).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.dates import format_http_date
from stoker.http.freshness import HEURISTICALLY_CACHEABLE, UNDERSTOOD_STATUSES
from stoker.http.policy import (
    RuleTTL,
    StaleDefaults,
    StorageDecision,
    decide_storage,
    field_in_effect,
    shareable_with_authorization,
)

T = 1_700_000_000.0
DATE = format_http_date(T)
DEFAULTS = StaleDefaults(swr=10.0, sie=20.0, keep=30.0, heuristic_fraction=0.1, heuristic_max=86400)

H = list[tuple[bytes, bytes]]


def h(*pairs: tuple[str, str]) -> H:
    return [(name.encode(), value.encode()) for name, value in pairs]


def decide(
    *response: tuple[str, str],
    request: H | None = None,
    method: str = "GET",
    status: int = 200,
    rule: RuleTTL | None = None,
    defaults: StaleDefaults = DEFAULTS,
    request_time: float = T,
    response_time: float = T,
) -> StorageDecision:
    return decide_storage(
        method=method,
        status=status,
        request_headers=request or [],
        response_headers=h(*response),
        request_time=request_time,
        response_time=response_time,
        rule=rule,
        defaults=defaults,
    )


def check(decision: StorageDecision, expected: dict[str, Any]) -> None:
    for field, value in expected.items():
        assert getattr(decision, field) == value, (field, decision)
    assert decision.store == (decision.reason == "ok")


CC = "cache-control"
CDN = "cdn-cache-control"
SUR = "surrogate-control"
ETAG = ("etag", '"v1"')
LM_1000 = ("last-modified", format_http_date(T - 1000))


# ---------------------------------------------------------------------------
# Step 1: method and status gates (RFC 9111 §3)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"method": "POST"}, "method"),
        ({"method": "HEAD"}, "method"),
        ({"method": "get"}, "method"),  # RFC 9110 §9.1: methods are case-sensitive
        ({"method": "PUT"}, "method"),
        ({"status": 206}, "partial"),  # RFC 9111 §3.3: no partial storage
        ({"status": 100}, "status"),
        ({"status": 101}, "status"),
        ({"status": 199}, "status"),
        ({"status": 304}, "status"),  # a 304 updates (§4.3.4), never stored
        ({"status": 0}, "status"),
        ({"status": 1000}, "status"),
    ],
)
def test_method_and_status_gates(kwargs: dict[str, Any], reason: str) -> None:
    decision = decide((CC, "public, max-age=60"), ETAG, **kwargs)
    check(decision, {"store": False, "reason": reason})


# ---------------------------------------------------------------------------
# Steps 2-7 and 9: one table over the whole decision
# ---------------------------------------------------------------------------
CASES: list[tuple[str, tuple[tuple[str, str], ...], dict[str, Any], dict[str, Any]]] = [
    # --- RFC 9111 §4.2.1 explicit lifetimes --------------------------------
    ("max-age", ((CC, "max-age=60"),), {}, {"store": True, "fresh_for": 60, "source": "max-age"}),
    (
        "s-maxage beats max-age (§5.2.2.10)",
        ((CC, "max-age=60, s-maxage=120"),),
        {},
        {"fresh_for": 120, "source": "s-maxage"},
    ),
    (
        "max-age beats Expires (§5.3)",
        ((CC, "max-age=60"), ("date", DATE), ("expires", format_http_date(T + 999))),
        {},
        {"fresh_for": 60, "source": "max-age"},
    ),
    (
        "Expires minus Date",
        (("date", format_http_date(T - 50)), ("expires", format_http_date(T + 50))),
        {},
        {"fresh_for": 100, "source": "expires"},
    ),
    (
        "Expires without Date uses response_time",
        (("expires", format_http_date(T + 70)),),
        {},
        {"fresh_for": 70, "source": "expires"},
    ),
    (
        "invalid Expires is stale (§5.3)",
        (("expires", "0"),),
        {},
        {"store": True, "fresh_for": 0, "source": "expires"},
    ),
    (
        "Expires in the past",
        (("date", DATE), ("expires", format_http_date(T - 10))),
        {},
        {"store": True, "fresh_for": 0, "source": "expires"},
    ),
    (
        "Expires in UTC is not an HTTP-date: expired (§5.3)",
        (("date", DATE), ("expires", "Thu, 01 Dec 2033 16:00:00 UTC"), ETAG),
        {},
        {"store": True, "fresh_for": 0, "source": "expires"},
    ),
    (
        "Expires with a numeric zone: expired (§5.3)",
        (("date", DATE), ("expires", "Thu, 01 Dec 2033 16:00:00 +0000")),
        {},
        {"store": True, "fresh_for": 0, "source": "expires"},
    ),
    (
        "Expires -1: expired (§5.3)",
        (("expires", "-1"),),
        {},
        {"store": True, "fresh_for": 0, "source": "expires"},
    ),
    (
        "two different Expires: expired (§4.2.1)",
        (("date", DATE), ("expires", format_http_date(T + 60)),
         ("expires", format_http_date(T + 600))),
        {},
        {"store": True, "fresh_for": 0, "source": "expires"},
    ),
    (
        "the same Expires twice is used",
        (("date", DATE), ("expires", format_http_date(T + 60)),
         ("expires", format_http_date(T + 60))),
        {},
        {"store": True, "fresh_for": 60, "source": "expires"},
    ),
    (
        "malformed max-age is stale (§4.2.1)",
        ((CC, "max-age=abc"),),
        {},
        {"store": True, "fresh_for": 0, "source": "max-age"},
    ),
    (
        "malformed s-maxage is stale, even with max-age",
        ((CC, "s-maxage=-1, max-age=60"),),
        {},
        {"fresh_for": 0, "source": "s-maxage"},
    ),
    (
        "max-age=0",
        ((CC, "max-age=0"),),
        {},
        {"store": True, "fresh_for": 0, "source": "max-age"},
    ),
    # --- rules -------------------------------------------------------------
    (
        "rule override beats origin",
        ((CC, "max-age=10, s-maxage=20"),),
        {"rule": RuleTTL(ttl=300, override=True)},
        {"fresh_for": 300, "source": "rule-override"},
    ),
    (
        "rule override without ttl keeps origin lifetime",
        ((CC, "max-age=10, stale-while-revalidate=1"),),
        {"rule": RuleTTL(swr=5, override=True)},
        {"fresh_for": 10, "source": "max-age", "swr": 5},
    ),
    (
        "rule ttl only when origin is silent",
        ((CC, "max-age=10"),),
        {"rule": RuleTTL(ttl=300)},
        {"fresh_for": 10, "source": "max-age"},
    ),
    (
        "rule ttl when origin is silent",
        ((CC, "public"),),
        {"rule": RuleTTL(ttl=300)},
        {"store": True, "fresh_for": 300, "source": "rule"},
    ),
    (
        "rule ttl beats heuristic",
        (LM_1000,),
        {"rule": RuleTTL(ttl=300)},
        {"fresh_for": 300, "source": "rule"},
    ),
    (
        "rule ttl does not beat Expires",
        (("expires", "0"),),
        {"rule": RuleTTL(ttl=300)},
        {"fresh_for": 0, "source": "expires"},
    ),
    (
        "negative rule ttl clamps to 0",
        (),
        {"rule": RuleTTL(ttl=-5, override=True)},
        {"store": True, "fresh_for": 0, "source": "rule-override"},
    ),
    # --- RFC 9111 §4.2.2 heuristics ----------------------------------------
    ("heuristic 10 %", (LM_1000,), {}, {"fresh_for": 100, "source": "heuristic", "keep": 30}),
    (
        "heuristic from Date",
        (LM_1000, ("date", format_http_date(T - 500))),
        {},
        {"fresh_for": 50, "source": "heuristic"},
    ),
    (
        "heuristic capped",
        (("last-modified", format_http_date(T - 10**8)),),
        {},
        {"fresh_for": 86400, "source": "heuristic"},
    ),
    (
        "heuristic custom fraction and cap",
        (LM_1000,),
        {"defaults": StaleDefaults(heuristic_fraction=0.5, heuristic_max=200)},
        {"fresh_for": 200, "source": "heuristic"},
    ),
    (
        "heuristic from a future Last-Modified is 0",
        (("last-modified", format_http_date(T + 1000)),),
        {},
        {"store": True, "fresh_for": 0, "source": "heuristic"},
    ),
    (
        "heuristic for 404",
        (LM_1000,),
        {"status": 404},
        {"store": True, "fresh_for": 100, "source": "heuristic"},
    ),
    # --- validator-only / no-freshness -------------------------------------
    ("ETag only", (ETAG,), {}, {"store": True, "fresh_for": 0, "source": "validator-only"}),
    (
        "invalid Last-Modified still validates",
        (("last-modified", "garbage"),),
        {},
        {"store": True, "fresh_for": 0, "source": "validator-only", "keep": 30},
    ),
    ("nothing at all", (), {}, {"store": False, "reason": "no-freshness"}),
    ("public alone", ((CC, "public"),), {}, {"store": False, "reason": "no-freshness"}),
    # --- step 8: status ----------------------------------------------------
    (
        "500 with max-age is stored",
        ((CC, "max-age=5"),),
        {"status": 500},
        {"store": True, "fresh_for": 5},
    ),
    (
        "302 with Expires is stored",
        (("expires", format_http_date(T + 5)),),
        {"status": 302},
        {"store": True, "fresh_for": 5, "source": "expires"},
    ),
    (
        "503 with rule override is stored",
        (),
        {"status": 503, "rule": RuleTTL(ttl=5, override=True)},
        {"store": True, "fresh_for": 5},
    ),
    ("500 heuristic refused", (LM_1000,), {"status": 500}, {"store": False, "reason": "status"}),
    ("302 validator refused", (ETAG,), {"status": 302}, {"store": False, "reason": "status"}),
    (
        "500 rule refused",
        (),
        {"status": 500, "rule": RuleTTL(ttl=60)},
        {"store": False, "reason": "status"},
    ),
    ("302 nothing", (), {"status": 302}, {"store": False, "reason": "status"}),
    (
        "302 public heuristic (RFC 9111 §4.2.2 public)",
        ((CC, "public"), LM_1000),
        {"status": 302},
        {"store": True, "source": "heuristic", "fresh_for": 100},
    ),
    (
        "301 heuristic",
        (LM_1000,),
        {"status": 301},
        {"store": True, "source": "heuristic"},
    ),
    # --- RFC 9111 §3: no-store, private --------------------------------------
    ("response no-store", ((CC, "no-store, max-age=60"),), {}, {"reason": "no-store"}),
    (
        "request no-store",
        ((CC, "max-age=60"),),
        {"request": h((CC, "no-store"))},
        {"reason": "no-store"},
    ),
    (
        "request no-cache does not prevent storing",
        ((CC, "max-age=60"),),
        {"request": h((CC, "no-cache"))},
        {"store": True},
    ),
    ("private", ((CC, "private, max-age=60"),), {}, {"reason": "private"}),
    ("qualified private", ((CC, 'private="x-user", max-age=60'),), {}, {"reason": "private"}),
    (
        "no-store beats override",
        ((CC, "no-store"),),
        {"rule": RuleTTL(ttl=60, override=True)},
        {"reason": "no-store"},
    ),
    (
        "private beats override",
        ((CC, "private"),),
        {"rule": RuleTTL(ttl=60, override=True)},
        {"reason": "private"},
    ),
    # --- RFC 9111 §3.5 Authorization ---------------------------------------
    (
        "authorization refused",
        ((CC, "max-age=60"),),
        {"request": h(("authorization", "Bearer x"))},
        {"reason": "authorization"},
    ),
    (
        "authorization + public",
        ((CC, "public, max-age=60"),),
        {"request": h(("authorization", "Bearer x"))},
        {"store": True},
    ),
    (
        "authorization + s-maxage",
        ((CC, "s-maxage=60"),),
        {"request": h(("authorization", "Bearer x"))},
        {"store": True, "source": "s-maxage"},
    ),
    (
        "authorization + must-revalidate",
        ((CC, "must-revalidate, max-age=60"),),
        {"request": h(("authorization", "Bearer x"))},
        {"store": True, "revalidate_only": True, "fresh_for": 60},
    ),
    (
        "authorization + CDN-Cache-Control public",
        ((CDN, "public, max-age=60"),),
        {"request": h(("authorization", "Bearer x"))},
        {"store": True, "source": "cdn-cache-control"},
    ),
    (
        "authorization + rule override still refused",
        ((CC, "max-age=60"),),
        {"request": h(("authorization", "x")), "rule": RuleTTL(ttl=9, override=True)},
        {"reason": "authorization"},
    ),
    # --- Set-Cookie ----------------------------------------------------------
    ("set-cookie", ((CC, "max-age=60"), ("set-cookie", "a=1")), {}, {"reason": "set-cookie"}),
    (
        "set-cookie with a rule that does not strip",
        ((CC, "max-age=60"), ("set-cookie", "a=1")),
        {"rule": RuleTTL(ttl=5)},
        {"reason": "set-cookie"},
    ),
    (
        "set-cookie stripped by rule",
        ((CC, "max-age=60"), ("set-cookie", "a=1")),
        {"rule": RuleTTL(strip_set_cookie=True)},
        {"store": True, "strip_set_cookie": True, "fresh_for": 60},
    ),
    (
        "strip rule without set-cookie",
        ((CC, "max-age=60"),),
        {"rule": RuleTTL(strip_set_cookie=True)},
        {"store": True, "strip_set_cookie": False},
    ),
    # --- RFC 9111 §5.2.2.3 must-understand ---------------------------------
    (
        "must-understand overrides no-store for an understood status",
        ((CC, "no-store, must-understand, max-age=60"),),
        {},
        {"store": True, "fresh_for": 60},
    ),
    (
        "must-understand with no-store on a 404",
        ((CC, "must-understand, no-store, max-age=60"),),
        {"status": 404},
        {"store": True, "fresh_for": 60},
    ),
    (
        "must-understand on an unknown status is not stored",
        ((CC, "must-understand, max-age=60"),),
        {"status": 299},
        {"reason": "must-understand"},
    ),
    (
        "Cache-Control's must-understand yields to a valid CDN-Cache-Control (RFC 9213)",
        ((CC, "must-understand"), (CDN, "max-age=100")),
        {"status": 500},
        {"store": True, "fresh_for": 100},
    ),
    (
        "must-understand with no-store on an unknown status",
        ((CC, "no-store, must-understand, max-age=60"),),
        {"status": 599},
        {"reason": "must-understand"},
    ),
    (
        "must-understand does not override a request no-store",
        ((CC, "no-store, must-understand, max-age=60"),),
        {"request": h((CC, "no-store"))},
        {"reason": "no-store"},
    ),
    (
        "must-understand does not override private",
        ((CC, "no-store, private, must-understand, max-age=60"),),
        {},
        {"reason": "private"},
    ),
    (
        "must-understand in CDN-Cache-Control",
        ((CC, "no-store"), (CDN, "no-store, must-understand, max-age=60")),
        {"status": 307},
        {"store": True, "fresh_for": 60, "source": "cdn-cache-control"},
    ),
    # --- Vary ------------------------------------------------------------------
    ("vary star", ((CC, "max-age=60"), ("vary", "*")), {}, {"reason": "vary-star"}),
    (
        "vary list with star",
        ((CC, "max-age=60"), ("vary", "accept, *")),
        {},
        {"reason": "vary-star"},
    ),
    ("vary names", ((CC, "max-age=60"), ("vary", "accept-encoding")), {}, {"store": True}),
    # --- RFC 9213 CDN-Cache-Control ----------------------------------------
    (
        "CDN-Cache-Control replaces Cache-Control lifetime",
        ((CC, "max-age=10"), (CDN, "max-age=100")),
        {},
        {"fresh_for": 100, "source": "cdn-cache-control"},
    ),
    (
        "CDN-Cache-Control overrides Cache-Control private",
        ((CC, "private, no-store"), (CDN, "max-age=100")),
        {},
        {"store": True, "fresh_for": 100},
    ),
    (
        "CDN-Cache-Control no-store",
        ((CC, "max-age=10"), (CDN, "no-store")),
        {},
        {"reason": "no-store"},
    ),
    (
        "CDN-Cache-Control private",
        ((CC, "max-age=10"), (CDN, "private")),
        {},
        {"reason": "private"},
    ),
    (
        "CDN-Cache-Control ignores s-maxage",
        ((CDN, "s-maxage=5, max-age=100"),),
        {},
        {"fresh_for": 100, "source": "cdn-cache-control"},
    ),
    (
        "CDN-Cache-Control hides Cache-Control and Expires (§2.1)",
        ((CC, "max-age=10"), ("expires", format_http_date(T + 50)), (CDN, "public")),
        {},
        {"store": False, "reason": "no-freshness"},
    ),
    (
        "CDN-Cache-Control without lifetime falls to heuristic",
        ((CC, "max-age=10"), (CDN, "public"), LM_1000),
        {},
        {"store": True, "source": "heuristic", "fresh_for": 100},
    ),
    (
        "empty CDN-Cache-Control is ignored",
        ((CC, "max-age=10"), (CDN, " , ")),
        {},
        {"fresh_for": 10, "source": "max-age"},
    ),
    (
        "CDN-Cache-Control that is not an SF dictionary is ignored (RFC 9213 §2.1)",
        ((CC, "max-age=10"), (CDN, "&&&&&")),
        {},
        {"fresh_for": 10, "source": "max-age"},
    ),
    (
        "CDN-Cache-Control with an upper-case key is not a dictionary",
        ((CC, "max-age=10"), (CDN, "Max-Age=100")),
        {},
        {"fresh_for": 10, "source": "max-age"},
    ),
    (
        "CDN-Cache-Control with a trailing comma is not a dictionary",
        ((CC, "max-age=10"), (CDN, "max-age=100,")),
        {},
        {"fresh_for": 10, "source": "max-age"},
    ),
    (
        "unparseable CDN-Cache-Control falls back to Surrogate-Control",
        ((CC, "max-age=10"), (SUR, "max-age=30"), (CDN, "max-age=100;;")),
        {},
        {"fresh_for": 30, "source": "surrogate-control"},
    ),
    (
        "unparseable CDN-Cache-Control lets Expires apply",
        (("date", DATE), ("expires", format_http_date(T + 40)), (CDN, "no-store, &&")),
        {},
        {"store": True, "fresh_for": 40, "source": "expires"},
    ),
    (
        "CDN max-age as a String is ignored, the field stays in effect",
        ((CC, "max-age=10"), (CDN, 'max-age="60"'), LM_1000),
        {},
        {"store": True, "source": "heuristic", "fresh_for": 100},
    ),
    (
        "CDN max-age as a Decimal is ignored",
        ((CC, "max-age=10"), (CDN, "max-age=60.5"), ETAG),
        {},
        {"store": True, "source": "validator-only", "fresh_for": 0},
    ),
    (
        "CDN no-store=?0 is not no-store",
        ((CDN, "no-store=?0, max-age=60"),),
        {},
        {"store": True, "fresh_for": 60},
    ),
    (
        "CDN-Cache-Control no-cache",
        ((CC, "max-age=10"), (CDN, "no-cache, max-age=50")),
        {},
        {"store": True, "fresh_for": 0, "revalidate_only": True, "swr": 0, "sie": 0},
    ),
    (
        "CDN-Cache-Control stale directives",
        ((CC, "stale-while-revalidate=99"), (CDN, "max-age=5, stale-while-revalidate=7")),
        {},
        {"swr": 7, "sie": 20},
    ),
    (
        "CDN-Cache-Control beats Surrogate-Control",
        ((SUR, "max-age=30"), (CDN, "max-age=100")),
        {},
        {"fresh_for": 100, "source": "cdn-cache-control"},
    ),
    # --- Surrogate-Control -------------------------------------------------
    (
        "Surrogate-Control replaces Cache-Control",
        ((CC, "max-age=10"), (SUR, "max-age=30")),
        {},
        {"fresh_for": 30, "source": "surrogate-control"},
    ),
    (
        "Surrogate-Control overrides Cache-Control private",
        ((CC, "private"), (SUR, "max-age=30")),
        {},
        {"store": True, "fresh_for": 30},
    ),
    (
        "Surrogate-Control no-store",
        ((CC, "max-age=10"), (SUR, "no-store")),
        {},
        {"reason": "no-store"},
    ),
    (
        "Surrogate-Control stale directives",
        ((SUR, "max-age=30, stale-while-revalidate=3, stale-if-error=4"),),
        {},
        {"swr": 3, "sie": 4},
    ),
    (
        "Surrogate-Control honours only its four directives",
        ((SUR, "max-age=30, must-revalidate, no-cache, private"),),
        {},
        {"store": True, "fresh_for": 30, "revalidate_only": False, "swr": 10},
    ),
    # --- RFC 5861 stale windows --------------------------------------------------
    (
        "origin stale directives",
        ((CC, "max-age=60, stale-while-revalidate=30, stale-if-error=40"),),
        {},
        {"swr": 30, "sie": 40},
    ),
    ("defaults when silent", ((CC, "max-age=60"),), {}, {"swr": 10, "sie": 20}),
    (
        "rule values when origin silent",
        ((CC, "max-age=60"),),
        {"rule": RuleTTL(swr=1, sie=2)},
        {"swr": 1, "sie": 2},
    ),
    (
        "rule values partial",
        ((CC, "max-age=60"),),
        {"rule": RuleTTL(swr=1)},
        {"swr": 1, "sie": 20},
    ),
    (
        "origin beats rule without override",
        ((CC, "max-age=60, stale-while-revalidate=30, stale-if-error=40"),),
        {"rule": RuleTTL(swr=1, sie=2)},
        {"swr": 30, "sie": 40},
    ),
    (
        "rule beats origin with override",
        ((CC, "max-age=60, stale-while-revalidate=30, stale-if-error=40"),),
        {"rule": RuleTTL(swr=1, sie=2, override=True)},
        {"swr": 1, "sie": 2},
    ),
    (
        "override falls back to origin for unset values",
        ((CC, "max-age=60, stale-while-revalidate=30"),),
        {"rule": RuleTTL(ttl=5, sie=2, override=True)},
        {"fresh_for": 5, "swr": 30, "sie": 2},
    ),
    (
        "malformed stale-while-revalidate is 0",
        ((CC, "max-age=60, stale-while-revalidate=x"),),
        {},
        {"swr": 0, "sie": 20},
    ),
    # --- revalidate_only (§5.2.2.2, §5.2.2.4, §5.2.2.8) ------------------------
    (
        "no-cache: stored, always revalidated",
        ((CC, "no-cache, max-age=60, stale-while-revalidate=30"), ETAG),
        {},
        {"store": True, "fresh_for": 0, "revalidate_only": True, "swr": 0, "sie": 0, "keep": 30},
    ),
    (
        "qualified no-cache treated as unqualified",
        ((CC, 'no-cache="x-foo", max-age=60'),),
        {},
        {"store": True, "fresh_for": 0, "revalidate_only": True},
    ),
    (
        "must-revalidate keeps lifetime, no stale",
        ((CC, "must-revalidate, max-age=60, stale-if-error=100"),),
        {"rule": RuleTTL(swr=5, sie=5)},
        {"fresh_for": 60, "revalidate_only": True, "swr": 0, "sie": 0},
    ),
    (
        "proxy-revalidate",
        ((CC, "proxy-revalidate, max-age=60"),),
        {},
        {"fresh_for": 60, "revalidate_only": True, "swr": 0, "sie": 0},
    ),
    (
        "no-cache without any lifetime, with validator",
        ((CC, "no-cache"), ETAG),
        {},
        {"store": True, "source": "validator-only", "revalidate_only": True},
    ),
    (
        "no-cache without lifetime or validator",
        ((CC, "no-cache"),),
        {},
        {"store": False, "reason": "no-freshness"},
    ),
    (
        "override ignores no-cache",
        ((CC, "no-cache, must-revalidate"),),
        {"rule": RuleTTL(ttl=60, override=True)},
        {"fresh_for": 60, "revalidate_only": False, "swr": 10, "sie": 20},
    ),
    # --- step 10: keep -----------------------------------------------------
    ("keep with ETag", ((CC, "max-age=60"), ETAG), {}, {"keep": 30}),
    ("keep with Last-Modified", ((CC, "max-age=60"), LM_1000), {}, {"keep": 30}),
    ("no keep without validators", ((CC, "max-age=60"),), {}, {"keep": 0}),
    # --- header spelling ---------------------------------------------------
    (
        "Cache-Control split over field lines",
        ((CC, "public"), (CC, "max-age=60")),
        {},
        {"fresh_for": 60},
    ),
    (
        "first max-age wins across lines",
        ((CC, "max-age=60"), (CC, "max-age=1")),
        {},
        {"fresh_for": 60},
    ),
]


@pytest.mark.parametrize(
    ("name", "response", "kwargs", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_decision_table(
    name: str,
    response: tuple[tuple[str, str], ...],
    kwargs: dict[str, Any],
    expected: dict[str, Any],
) -> None:
    check(decide(*response, **kwargs), expected)


def test_must_understand_statuses_rfc9111_5_2_2_3() -> None:
    for status in range(200, 600):
        decision = decide((CC, "no-store, must-understand, max-age=60"), status=status)
        assert decision.store == (status in UNDERSTOOD_STATUSES and status != 206), status


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ((), False),
        (((CC, "max-age=60"),), False),
        (((CC, "public"),), True),
        (((CC, "s-maxage=0"),), True),
        (((CC, "must-revalidate, max-age=5"),), True),
        (((CC, "proxy-revalidate"),), False),
        (((CDN, "public"),), True),
        (((CDN, "must-revalidate"),), True),
        (((CDN, "s-maxage=5"),), False),
        (((CDN, "&&&"), (CC, "max-age=5")), False),  # unparseable CDN is ignored
        (((SUR, "public"),), False),  # Surrogate-Control has no public
        (((CC, "private, public"),), True),  # private is refused separately
    ],
)
def test_shareable_with_authorization_rfc9111_3_5(
    response: tuple[tuple[str, str], ...], expected: bool
) -> None:
    assert shareable_with_authorization(h(*response)) is expected
    stored = decide(*response, (CC, "max-age=60"), request=h(("authorization", "Bearer t")))
    if not expected:
        assert stored.reason == "authorization"


@pytest.mark.parametrize(
    ("value", "field_name"),
    [
        ("max-age=60", CDN),
        ("none", CDN),  # RFC 9213 §3.1 example: an unknown directive keeps the field
        ('max-age="60"', CDN),
        ("", CC),
        ("&&&&&", CC),
        ("max-age=60, ", CC),
        ("max-age=6 0", CC),
        ('private="x', CC),  # unterminated String
        ('private="x"', CDN),
    ],
)
def test_cdn_cache_control_must_be_an_sf_dictionary(value: str, field_name: str) -> None:
    assert field_in_effect(h((CDN, value), (CC, "max-age=5")))[1] == field_name


def test_refusals_carry_no_lifetimes() -> None:
    decision = decide((CC, "no-store, max-age=60"), ETAG)
    assert decision == StorageDecision(store=False, reason="no-store")


def test_initial_age_rfc9111_4_2_3() -> None:
    decision = decide(
        (CC, "max-age=60"), ("age", "5"), ("date", DATE), request_time=T - 1, response_time=T
    )
    assert decision.initial_age == pytest.approx(6.0)
    decision = decide((CC, "max-age=60"), ("date", format_http_date(T - 20)))
    assert decision.initial_age == pytest.approx(20.0)
    decision = decide((CC, "max-age=60"), ("age", "junk"))
    assert decision.initial_age == 0.0


def test_heuristically_cacheable_statuses_with_validator() -> None:
    for status in range(200, 600):
        decision = decide(ETAG, status=status)
        if status in HEURISTICALLY_CACHEABLE and status != 206:
            assert decision.store, status
        else:
            assert not decision.store, status


def test_explicit_freshness_any_final_status() -> None:
    for status in range(200, 600):
        decision = decide((CC, "max-age=60"), status=status)
        assert decision.store == (status not in (206, 304)), status


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------
RESPONSE_FIELDS = st.sampled_from(
    [
        (CC, "max-age=60"),
        (CC, "s-maxage=30"),
        (CC, "max-age=abc"),
        (CC, "no-store"),
        (CC, "private"),
        (CC, 'private="x"'),
        (CC, "no-cache"),
        (CC, 'no-cache="set-cookie"'),
        (CC, "public"),
        (CC, "must-revalidate"),
        (CC, "proxy-revalidate"),
        (CC, "must-understand"),
        (CC, "stale-while-revalidate=30, stale-if-error=60"),
        (CDN, "max-age=100"),
        (CDN, "no-store"),
        (CDN, "private"),
        (CDN, "no-cache"),
        (CDN, "stale-while-revalidate=5"),
        (CDN, "max-age=oops"),  # a Token: ignored, the field stays in effect
        (CDN, "max-age=6 0"),  # not a dictionary: the whole field is ignored
        (CDN, "must-understand"),
        (SUR, "max-age=50"),
        (SUR, "no-store"),
        (SUR, "max-age=50, stale-if-error=1"),
        ("expires", format_http_date(T + 60)),
        ("expires", format_http_date(T - 60)),
        ("expires", "0"),
        ("date", DATE),
        ("date", format_http_date(T + 3600)),
        ("age", "30"),
        ("age", "-3"),
        ETAG,
        LM_1000,
        ("last-modified", format_http_date(T + 5000)),
        ("set-cookie", "a=1"),
        ("vary", "*"),
        ("vary", "accept-encoding"),
    ]
)
REQUEST_FIELDS = st.sampled_from(
    [(CC, "no-store"), (CC, "no-cache"), ("authorization", "Basic x"), ("accept", "*/*")]
)
RULES = st.one_of(
    st.none(),
    st.builds(
        RuleTTL,
        ttl=st.one_of(st.none(), st.floats(-10, 1e6)),
        swr=st.one_of(st.none(), st.floats(-10, 1e6)),
        sie=st.one_of(st.none(), st.floats(-10, 1e6)),
        override=st.booleans(),
        strip_set_cookie=st.booleans(),
    ),
)
STALE_DEFAULTS = st.builds(
    StaleDefaults,
    swr=st.floats(0, 1e6),
    sie=st.floats(0, 1e6),
    keep=st.floats(0, 1e6),
    heuristic_fraction=st.floats(0, 1),
    heuristic_max=st.floats(0, 1e7),
)


@given(
    response=st.lists(RESPONSE_FIELDS, max_size=6),
    request=st.lists(REQUEST_FIELDS, max_size=3),
    method=st.sampled_from(["GET", "HEAD", "POST"]),
    status=st.sampled_from([100, 200, 203, 204, 206, 301, 302, 304, 404, 500, 503]),
    rule=RULES,
    defaults=STALE_DEFAULTS,
    delay=st.floats(-5, 5),
)
def test_decision_invariants(
    response: list[tuple[str, str]],
    request: list[tuple[str, str]],
    method: str,
    status: int,
    rule: RuleTTL | None,
    defaults: StaleDefaults,
    delay: float,
) -> None:
    request_headers = h(*request)
    d = decide(
        *response,
        request=request_headers,
        method=method,
        status=status,
        rule=rule,
        defaults=defaults,
        request_time=T - delay,
    )
    names = {name for name, _ in response}
    values = {f"{name}: {value}" for name, value in response}
    targeted = CDN in names or SUR in names

    assert d.store == (d.reason == "ok")
    assert d.fresh_for >= 0 and d.swr >= 0 and d.sie >= 0 and d.keep >= 0
    assert d.initial_age >= 0
    if d.revalidate_only:
        assert d.swr == 0 and d.sie == 0
    if not d.store:
        return
    assert method == "GET" and status not in (100, 206, 304)
    assert "vary: *" not in values
    assert f"{CC}: no-store" not in {f"{n}: {v}" for n, v in request}
    if "set-cookie" in names:
        assert rule is not None and rule.strip_set_cookie and d.strip_set_cookie
    else:
        assert not d.strip_set_cookie
    cdn_valid = f"{CDN}: max-age=6 0" not in values  # else the whole field is ignored
    # Cache-Control's must-understand binds only while Cache-Control is the field in effect
    # (RFC 9213 §2.1: a valid targeted field replaces it; its own must-understand binds)
    cc_in_effect = field_in_effect(h(*response))[1] == "cache-control"
    if (cc_in_effect and f"{CC}: must-understand" in values) or (
            cdn_valid and f"{CDN}: must-understand" in values):
        assert status in UNDERSTOOD_STATUSES
    if not targeted and f"{CC}: must-understand" not in values:
        assert f"{CC}: no-store" not in values
    if not targeted:
        assert not any(v.startswith(f"{CC}: private") for v in values)
    if CDN in names and cdn_valid:
        assert f"{CDN}: private" not in values
        if f"{CDN}: must-understand" not in values:
            assert f"{CDN}: no-store" not in values
    elif SUR in names:
        assert f"{SUR}: no-store" not in values
    if "authorization" in {n for n, _ in request}:
        assert any(
            v in values for v in (f"{CC}: public", f"{CC}: s-maxage=30", f"{CC}: must-revalidate")
        )
    if d.source in ("rule", "heuristic", "validator-only"):
        assert status in HEURISTICALLY_CACHEABLE or f"{CC}: public" in values
    if d.keep > 0:
        assert "etag" in names or "last-modified" in names


RULE_10M = RuleTTL(ttl=600)
OVERRIDE_10M = RuleTTL(ttl=600, override=True)


@pytest.mark.parametrize(("response", "rule", "vouched"), [
    ((("cache-control", "max-age=60"),), None, True),
    ((("cache-control", "s-maxage=60"),), RULE_10M, True),
    ((("cache-control", "public"),), RULE_10M, True),
    ((("expires", "Thu, 01 Jan 2099 00:00:00 GMT"), ("date", DATE)), None, True),
    ((("cdn-cache-control", "max-age=60"),), None, True),
    ((("surrogate-control", "max-age=60"),), None, True),
    ((), RULE_10M, False),  # silent origin, rule ttl
    ((("cache-control", "max-age=60"),), OVERRIDE_10M, False),  # the operator's lifetime
    ((("cache-control", "public"),), OVERRIDE_10M, False),
    ((("last-modified", "Tue, 15 Nov 1994 12:45:26 GMT"), ("date", DATE)), None, False),
    ((("etag", '"v1"'),), None, False),  # validator only
    ((("cache-control", "no-cache"), ("etag", '"v1"')), RULE_10M, False),
])
def test_origin_vouched_only_for_its_own_explicit_lifetime_or_public(
        response: tuple[tuple[str, str], ...], rule: RuleTTL | None, vouched: bool) -> None:
    decision = decide(*response, rule=rule)
    assert decision.store
    assert decision.origin_vouched is vouched


@given(st.lists(st.sampled_from([
    ("cache-control", "max-age=5"), ("cache-control", "public"), ("cache-control", "no-cache"),
    ("expires", "garbage"), ("cdn-cache-control", "max-age=1"), ("etag", '"x"'),
    ("last-modified", "Tue, 15 Nov 1994 12:45:26 GMT")]), max_size=4),
    st.sampled_from([None, RULE_10M, OVERRIDE_10M]))
def test_origin_vouched_implies_the_origin_spoke(response: list[tuple[str, str]],
                                                 rule: RuleTTL | None) -> None:
    decision = decide(*response, rule=rule)
    spoke = any(name in ("cache-control", "expires", "cdn-cache-control", "surrogate-control")
                for name, _ in response)
    assert not decision.origin_vouched or (spoke and decision.store)
    if rule is OVERRIDE_10M:
        assert not decision.origin_vouched or ("cache-control", "public") in response

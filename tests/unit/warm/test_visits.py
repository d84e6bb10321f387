"""Classifying a warm visit from what the pipeline answered: its outcome and detail."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.cache_status import cache_status
from stoker.warm.visits import (
    NOT_STORED,
    OUTCOMES,
    STALE_SERVED,
    STOPGAP_STATUSES,
    Verdict,
    judge,
)

STOPGAP = b"x-stoker-stopgap"


def cs(*values: str) -> list[tuple[bytes, bytes]]:
    return [(b"cache-status", value.encode()) for value in values]


# Every Cache-Status the pipeline writes on a warm visit (proxy/pipeline.py, fetch.py).
@pytest.mark.parametrize(("status", "headers", "verdict"), [
    # from cache: fresh, landed while reading L2, or stale standing in for the origin
    (200, cs("stoker; hit; ttl=30"), Verdict("fresh")),
    (200, cs("stoker; hit; ttl=3; detail=stale-while-revalidate"), Verdict("fresh")),
    (200, cs("stoker; hit; ttl=-5; detail=stale-if-error"), Verdict("failed", STALE_SERVED)),
    (301, cs("stoker; hit; ttl=-5; detail=stale-if-error"), Verdict("failed", STALE_SERVED)),
    # fetched and stored, shared from the fetch that stored it, refreshed by a 304
    (200, cs("stoker; fwd=uri-miss; fwd-status=200; stored; ttl=60"), Verdict("warmed")),
    (301, cs("stoker; fwd=uri-miss; fwd-status=301; stored"), Verdict("warmed")),
    (200, cs("stoker; fwd=uri-miss; fwd-status=200; collapsed; ttl=60"), Verdict("warmed")),
    (200, cs("stoker; fwd=request; fwd-status=304; stored; ttl=60"), Verdict("not_modified")),
    # passed through: the storage decision's reason
    (200, cs("stoker; fwd=uri-miss; fwd-status=200; detail=set-cookie"),
     Verdict("not_stored", "set-cookie")),
    (200, cs("stoker; fwd=uri-miss; fwd-status=200; detail=private"),
     Verdict("not_stored", "private")),
    (200, cs("stoker; fwd=request; fwd-status=200; detail=no-store"),
     Verdict("not_stored", "no-store")),
    (200, cs("stoker; fwd=uri-miss; fwd-status=200; detail=no-freshness"),
     Verdict("not_stored", "no-freshness")),
    (200, cs("stoker; fwd=bypass; fwd-status=200; detail=cookie"),
     Verdict("not_stored", "cookie")),
    (200, cs("stoker; fwd=uri-miss; fwd-status=200; detail=too-large"),
     Verdict("not_stored", "too-large")),
    (200, cs("stoker; fwd=uri-miss; fwd-status=200; detail=corrupt-coding"),
     Verdict("not_stored", "corrupt-coding")),
    (200, cs("stoker; fwd=bypass; fwd-status=200"), Verdict("not_stored", NOT_STORED)),
    (200, cs("stoker; fwd=request; fwd-status=304"), Verdict("not_stored", NOT_STORED)),
    (200, [], Verdict("not_stored", NOT_STORED)),
    # errors, whatever Cache-Status says
    (404, cs("stoker; fwd=uri-miss; fwd-status=404; stored"), Verdict("failed", "status 404")),
    (500, cs("stoker; fwd=uri-miss; fwd-status=500; detail=status"),
     Verdict("failed", "status 500")),
    (502, cs("stoker; fwd=uri-miss; fwd-status=502; detail=origin-error"),
     Verdict("failed", "status 502")),
    (504, cs("stoker; fwd=uri-miss; fwd-status=504; detail=origin-timeout"),
     Verdict("failed", "status 504")),
    # placeholders
    (503, cs("stoker; fwd=uri-miss; fwd-status=503"), Verdict("stopgap")),
    (202, cs("stoker; fwd=uri-miss; fwd-status=202"), Verdict("stopgap")),
    (200, [(STOPGAP, b"1"), *cs("stoker; fwd=uri-miss; fwd-status=200; detail=stopgap")],
     Verdict("stopgap")),
])
def test_judge(status: int, headers: list[tuple[bytes, bytes]], verdict: Verdict) -> None:
    assert judge(status, headers, stopgap_header=STOPGAP) == verdict


def test_stokers_own_cache_status_is_the_last_field() -> None:
    headers = cs("nginx; hit", "stoker; fwd=uri-miss; fwd-status=200; detail=set-cookie")
    assert judge(200, headers, stopgap_header=STOPGAP) == Verdict("not_stored", "set-cookie")
    stored = cs("upstream; fwd=uri-miss; detail=private", "stoker; hit; ttl=10")
    assert judge(200, stored, stopgap_header=STOPGAP) == Verdict("fresh")


def test_a_detail_string_is_read_back_whole() -> None:
    headers = cs('stoker; fwd=uri-miss; fwd-status=200; detail="a; b=\\"c\\", hit"')
    assert judge(200, headers, stopgap_header=STOPGAP) == Verdict("not_stored", 'a; b="c", hit')


# --- properties, over every Cache-Status member Stoker can write ------------------------

_details = st.none() | st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E),
                                max_size=30)
_members = st.builds(
    lambda hit, fwd, fwd_status, stored, collapsed, ttl, detail: (
        dict(hit=hit, fwd=fwd, fwd_status=fwd_status, stored=stored, collapsed=collapsed,
             detail=detail),
        cache_status(hit=hit, fwd=fwd, fwd_status=fwd_status, stored=stored,
                     collapsed=collapsed, ttl=ttl, detail=detail)),
    st.booleans(), st.none() | st.sampled_from(["uri-miss", "request", "stale", "bypass"]),
    st.none() | st.sampled_from([200, 301, 304, 404]), st.booleans(), st.booleans(),
    st.none() | st.floats(-1e6, 1e6), _details)


@given(status=st.integers(100, 599), member=_members, stopgap=st.booleans(),
       upstream=st.lists(st.sampled_from(["nginx; hit", "cdn; fwd=miss; stored"]), max_size=2))
def test_outcome_and_detail_follow_the_module_invariants(
        status: int, member: tuple[dict[str, object], bytes], stopgap: bool,
        upstream: list[str]) -> None:
    params, value = member
    headers = [*cs(*upstream), (b"cache-status", value)] + ([(STOPGAP, b"1")] if stopgap else [])
    outcome, detail = judge(status, headers, stopgap_header=STOPGAP)
    assert outcome in OUTCOMES
    assert bool(detail) == (outcome in ("not_stored", "failed"))
    if stopgap or status in STOPGAP_STATUSES:
        expected = "stopgap"
    elif status >= 400:
        expected = "failed"
    elif params["hit"]:
        expected = "failed" if params["detail"] == "stale-if-error" else "fresh"
    elif params["stored"] or params["collapsed"]:
        expected = "not_modified" if params["fwd_status"] == 304 else "warmed"
    else:
        expected = "not_stored"
        assert detail == (params["detail"] or NOT_STORED)
    assert outcome == expected

"""Tests for stoker.http.cache_status (RFC 9211 §2; RFC 8941 encoding)."""

from __future__ import annotations

from typing import Any

import pytest

from stoker.http.cache_status import cache_status


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"hit": True, "ttl": 42}, b"stoker; hit; ttl=42"),
        (
            {"hit": False, "fwd": "uri-miss", "fwd_status": 200, "stored": True, "ttl": 60},
            b"stoker; fwd=uri-miss; fwd-status=200; stored; ttl=60",
        ),
        (
            {"hit": True, "ttl": -3, "detail": "stale-while-revalidate"},
            b"stoker; hit; ttl=-3; detail=stale-while-revalidate",
        ),
        ({"hit": False, "fwd": "bypass"}, b"stoker; fwd=bypass"),
        ({"hit": False, "fwd": "miss", "collapsed": True}, b"stoker; fwd=miss; collapsed"),
        ({"hit": True}, b"stoker; hit"),
        ({"hit": False}, b"stoker"),
        # RFC 9211 §2.4: ttl is an integer; round down
        ({"hit": True, "ttl": 41.9}, b"stoker; hit; ttl=41"),
        ({"hit": True, "ttl": -2.5}, b"stoker; hit; ttl=-3"),
        ({"hit": True, "ttl": float("inf")}, b"stoker; hit; ttl=999999999999999"),
        ({"hit": True, "ttl": float("nan")}, b"stoker; hit"),
        # RFC 9211 §2.8 detail: sf-token when valid, else sf-string
        ({"hit": True, "detail": "origin down"}, b'stoker; hit; detail="origin down"'),
        ({"hit": True, "detail": 'say "hi"\\'}, b'stoker; hit; detail="say \\"hi\\"\\\\"'),
        ({"hit": True, "detail": "caf\u00e9"}, b'stoker; hit; detail="caf?"'),
        ({"hit": True, "detail": "1abc"}, b'stoker; hit; detail="1abc"'),
        ({"hit": True, "detail": "a/b:c"}, b"stoker; hit; detail=a/b:c"),
        ({"hit": True, "detail": ""}, b'stoker; hit; detail=""'),
        # cache name: token or string
        ({"hit": True, "name": "edge-1"}, b"edge-1; hit"),
        ({"hit": True, "name": "My Cache"}, b'"My Cache"; hit'),
    ],
)
def test_cache_status_rfc9211(kwargs: dict[str, Any], expected: bytes) -> None:
    assert cache_status(**kwargs) == expected


@pytest.mark.parametrize(
    "fwd", ["bypass", "method", "uri-miss", "vary-miss", "miss", "request", "stale", "partial"]
)
def test_all_fwd_values_rfc9211_2_2(fwd: str) -> None:
    assert cache_status(hit=False, fwd=fwd) == f"stoker; fwd={fwd}".encode()


def test_invalid_fwd_asserts() -> None:
    with pytest.raises(AssertionError):
        cache_status(hit=False, fwd="nope")


def test_read_status_reads_back_what_cache_status_wrote() -> None:
    from stoker.http.cache_status import cache_status, read_status

    written = cache_status(hit=False, fwd="stale", fwd_status=304, stored=True, ttl=60).decode()
    assert read_status(written) == {"fwd": "stale", "fwd-status": 304, "stored": True, "ttl": 60}
    odd = cache_status(hit=False, fwd="uri-miss", detail='a "quoted"; detail').decode()
    assert read_status(f"upstream; hit, {odd}")["detail"] == 'a "quoted"; detail'
    assert read_status("") == {} and read_status("not a ; list,,") == {}

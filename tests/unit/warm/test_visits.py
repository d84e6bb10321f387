"""Classifying a warm visit from what the pipeline answered."""

from __future__ import annotations

import pytest

from stoker.warm.visits import classify

STOPGAP = b"x-stoker-stopgap"


def cs(value: str) -> list[tuple[bytes, bytes]]:
    return [(b"cache-status", value.encode())]


@pytest.mark.parametrize(("status", "headers", "outcome"), [
    (200, cs("stoker; hit; ttl=30"), "fresh"),
    (200, cs("stoker; fwd=uri-miss; fwd-status=200; stored; ttl=60"), "warmed"),
    (200, cs("stoker; fwd=request; fwd-status=304; stored; ttl=60"), "not_modified"),
    (200, cs("stoker; fwd=uri-miss; fwd-status=200; collapsed; ttl=60"), "warmed"),
    (200, cs("stoker; fwd=uri-miss; fwd-status=200; detail=private"), "passed"),
    (301, cs("stoker; fwd=uri-miss; fwd-status=301; stored"), "warmed"),
    (404, cs("stoker; fwd=uri-miss; fwd-status=404; stored"), "failed"),
    (502, cs("stoker; fwd=uri-miss; fwd-status=502; detail=origin-error"), "failed"),
    (503, cs("stoker; fwd=uri-miss; fwd-status=503"), "stopgap"),
    (202, cs("stoker; fwd=uri-miss; fwd-status=202"), "stopgap"),
    (200, [(STOPGAP, b"1"), *cs("stoker; fwd=uri-miss; fwd-status=200; detail=stopgap")],
     "stopgap"),
    (200, [], "passed"),
])
def test_classify(status: int, headers: list[tuple[bytes, bytes]], outcome: str) -> None:
    assert classify(status, headers, stopgap_header=STOPGAP) == outcome

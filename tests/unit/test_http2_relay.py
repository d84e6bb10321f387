"""Telling an HTTP/2 connection (prior knowledge) from an HTTP/1.1 one by its first bytes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stoker.http2_relay import PREFACE, starts_http2


@given(st.integers(0, len(PREFACE) - 1))
def test_a_strict_prefix_of_the_preface_is_undecided(length: int) -> None:
    assert starts_http2(PREFACE[:length]) is None


@given(st.binary())
def test_the_preface_and_anything_after_it_is_http2(rest: bytes) -> None:
    assert starts_http2(PREFACE + rest) is True


@given(st.binary(min_size=1))
def test_anything_else_is_http1(data: bytes) -> None:
    decided = starts_http2(data)
    if data.startswith(PREFACE):
        assert decided is True
    elif PREFACE.startswith(data):
        assert decided is None
    else:
        assert decided is False



def test_requests_that_begin_like_the_preface_are_http1() -> None:
    assert starts_http2(b"PRI / HTTP/1.1\r\n") is False
    assert starts_http2(b"POST / HTTP/1.1\r\n") is False
    assert starts_http2(b"PR") is None

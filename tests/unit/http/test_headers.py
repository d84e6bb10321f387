"""Tests for stoker.http.headers (RFC 9110 §5.3, §7.6.1)."""

from __future__ import annotations

import pytest

from stoker.http.headers import (
    HOP_BY_HOP,
    get_all,
    get_header,
    get_joined,
    set_cookie_names,
    strip_hop_by_hop,
    vary_names,
    without,
)

HEADERS = [
    (b"content-type", b"text/html"),
    (b"vary", b"accept-encoding"),
    (b"vary", b"accept-language"),
    (b"x-empty", b""),
]


def test_get_header_first_value() -> None:
    assert get_header(HEADERS, b"vary") == b"accept-encoding"
    assert get_header(HEADERS, b"missing") is None
    assert get_header(HEADERS, b"x-empty") == b""


def test_names_are_case_insensitive() -> None:
    # RFC 9110 §5.1: field names are case-insensitive.
    assert get_header(HEADERS, b"Content-Type") == b"text/html"
    assert get_header([(b"Content-Type", b"x")], b"content-type") == b"x"
    assert get_all([(b"VARY", b"a"), (b"vary", b"b")], b"Vary") == [b"a", b"b"]


def test_get_all_in_order() -> None:
    assert get_all(HEADERS, b"vary") == [b"accept-encoding", b"accept-language"]
    assert get_all(HEADERS, b"missing") == []


def test_get_joined_rfc9110_5_3() -> None:
    # RFC 9110 §5.3: field lines combine with ", " in order.
    assert get_joined(HEADERS, b"vary") == "accept-encoding, accept-language"
    assert get_joined(HEADERS, b"missing") is None
    assert get_joined(HEADERS, b"x-empty") == ""
    assert get_joined([(b"x", b"caf\xe9")], b"x") == "caf\u00e9"  # latin-1


def test_hop_by_hop_set() -> None:
    assert (
        frozenset(
            {
                b"connection",
                b"keep-alive",
                b"proxy-connection",
                b"te",
                b"trailer",
                b"transfer-encoding",
                b"upgrade",
                b"proxy-authenticate",
                b"proxy-authorization",
            }
        )
        == HOP_BY_HOP
    )


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        # RFC 9110 §7.6.1: drop Connection and the fields it names.
        (
            [
                (b"connection", b"close, X-Foo"),
                (b"x-foo", b"1"),
                (b"x-bar", b"2"),
                (b"keep-alive", b"timeout=5"),
                (b"transfer-encoding", b"chunked"),
                (b"content-type", b"text/plain"),
            ],
            [(b"x-bar", b"2"), (b"content-type", b"text/plain")],
        ),
        ([(b"connection", b" , ,"), (b"a", b"1")], [(b"a", b"1")]),
        ([(b"Upgrade", b"h2c"), (b"a", b"1")], [(b"a", b"1")]),
        (
            [(b"connection", b"x-a"), (b"connection", b"x-b"), (b"x-a", b""), (b"x-b", b"")],
            [],
        ),
        ([], []),
    ],
)
def test_strip_hop_by_hop(
    headers: list[tuple[bytes, bytes]], expected: list[tuple[bytes, bytes]]
) -> None:
    original = list(headers)
    assert strip_hop_by_hop(headers) == expected
    assert headers == original  # input untouched


def test_without() -> None:
    assert without(HEADERS, [b"vary", b"X-Empty"]) == [(b"content-type", b"text/html")]
    assert without(HEADERS, ()) == HEADERS
    assert without(HEADERS, ()) is not HEADERS


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ()),
        ("", ()),
        ("Accept-Encoding", ("accept-encoding",)),
        (
            "accept-language, Accept-Encoding, accept-encoding",
            ("accept-encoding", "accept-language"),
        ),
        (" , ,", ()),
        ("*", None),  # RFC 9110 §12.5.5
        ("accept, *", None),
    ],
)
def test_vary_names(value: str | None, expected: tuple[str, ...] | None) -> None:
    headers = [] if value is None else [(b"vary", value.encode())]
    assert vary_names(headers) == expected


def test_vary_names_reads_every_line() -> None:
    assert vary_names([(b"vary", b"Accept-Encoding"), (b"content-type", b"x"),
                       (b"vary", b"Cookie")]) == ("accept-encoding", "cookie")
    assert vary_names([(b"vary", b"Origin"), (b"vary", b"*")]) is None


def test_set_cookie_names_are_the_names_never_the_values() -> None:
    headers = [(b"Set-Cookie", b"sid=s3cret; Path=/; HttpOnly"), (b"content-type", b"x"),
               (b"set-cookie", b" csrf =t0ken"), (b"set-cookie", b"flag")]
    assert set_cookie_names(headers) == ["sid", "csrf", "flag"]
    assert set_cookie_names(HEADERS) == []

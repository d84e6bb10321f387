"""Tests for stoker.http.conditional (RFC 9110 §13.1-§13.2, §15.4.5; RFC 9111 §4.3)."""

from __future__ import annotations

import pytest

from stoker.http.conditional import (
    merge_not_modified,
    not_modified_headers,
    revalidation_headers,
    should_answer_not_modified,
)

ETAG = '"abc"'
LM = "Sun, 06 Nov 1994 08:49:37 GMT"
EARLIER = "Sat, 05 Nov 1994 08:49:37 GMT"
LATER = "Mon, 07 Nov 1994 08:49:37 GMT"

H = list[tuple[bytes, bytes]]


@pytest.mark.parametrize(
    ("request_headers", "etag", "last_modified", "expected"),
    [
        # RFC 9110 §13.1.2 If-None-Match, weak comparison (§8.8.3.2)
        ([(b"if-none-match", b'"abc"')], ETAG, None, True),
        ([(b"if-none-match", b'W/"abc"')], ETAG, None, True),
        ([(b"if-none-match", b'"abc"')], 'W/"abc"', None, True),
        ([(b"if-none-match", b'"x", "abc"')], ETAG, None, True),
        ([(b"if-none-match", b'"x"'), (b"if-none-match", b'"abc"')], ETAG, None, True),
        ([(b"if-none-match", b'"x",W/"abc" , "y"')], ETAG, None, True),
        ([(b"if-none-match", b'"a,b"')], '"a,b"', None, True),  # comma inside quotes
        ([(b"if-none-match", b'"ab"')], ETAG, None, False),
        ([(b"if-none-match", b'"x"')], ETAG, None, False),
        ([(b"if-none-match", b'"abc"')], None, None, False),
        ([(b"if-none-match", b"abc")], ETAG, None, True),  # lenient: unquoted
        ([(b"if-none-match", b'"abc')], ETAG, None, False),  # unterminated
        ([(b"if-none-match", b"")], ETAG, None, False),
        # "*" matches any current representation, even without an ETag
        ([(b"if-none-match", b"*")], ETAG, None, True),
        ([(b"if-none-match", b"*")], None, LM, True),
        ([(b"if-none-match", b'"x", *')], None, None, True),
        # RFC 9110 §13.2.2: If-None-Match takes precedence over If-Modified-Since
        ([(b"if-none-match", b'"x"'), (b"if-modified-since", LATER.encode())], ETAG, LM, False),
        ([(b"if-none-match", b'"abc"'), (b"if-modified-since", EARLIER.encode())], ETAG, LM, True),
        # RFC 9110 §13.1.3 If-Modified-Since
        ([(b"if-modified-since", LM.encode())], None, LM, True),
        ([(b"if-modified-since", LATER.encode())], None, LM, True),
        ([(b"if-modified-since", EARLIER.encode())], None, LM, False),
        ([(b"if-modified-since", LM.encode())], ETAG, None, False),  # nothing to compare
        ([(b"if-modified-since", b"garbage")], None, LM, False),  # invalid → ignored
        ([(b"if-modified-since", LM.encode())], None, "garbage", False),
        (
            [(b"if-modified-since", LM.encode()), (b"if-modified-since", LM.encode())],
            None,
            LM,
            False,  # more than one member → ignored
        ),
        ([(b"if-modified-since", b"Sunday, 06-Nov-94 08:49:37 GMT")], None, LM, True),
        # unconditional
        ([], ETAG, LM, False),
    ],
)
def test_should_answer_not_modified_rfc9110_13_2_2(
    request_headers: H, etag: str | None, last_modified: str | None, expected: bool
) -> None:
    result = should_answer_not_modified(request_headers, etag=etag, last_modified=last_modified)
    assert result is expected


@pytest.mark.parametrize(
    ("since", "last_modified", "date", "expected"),
    [
        # RFC 9110 §13.1.3: without Last-Modified, compare with the stored Date
        (LM, None, LM, True),
        (LATER, None, LM, True),
        (EARLIER, None, LM, False),
        (LM, None, None, False),
        (LM, None, "garbage", False),
        (LATER, EARLIER, LATER, True),  # Last-Modified, when present, decides
        (EARLIER, LM, EARLIER, False),
        (LATER, "garbage", EARLIER, False),  # invalid Last-Modified: no fallback
    ],
)
def test_if_modified_since_falls_back_to_date(
    since: str, last_modified: str | None, date: str | None, expected: bool
) -> None:
    request_headers = [(b"if-modified-since", since.encode())]
    result = should_answer_not_modified(request_headers, etag=None,
                                        last_modified=last_modified, date=date)
    assert result is expected


@pytest.mark.parametrize(
    ("etag", "last_modified", "expected"),
    [
        # RFC 9111 §4.3.1: send both validators when stored
        (ETAG, LM, [(b"if-none-match", b'"abc"'), (b"if-modified-since", LM.encode())]),
        (ETAG, None, [(b"if-none-match", b'"abc"')]),
        (None, LM, [(b"if-modified-since", LM.encode())]),
        (None, None, []),
        ('W/"w"', None, [(b"if-none-match", b'W/"w"')]),
        # no header injection
        ('"a"\r\nx-evil: 1', None, []),
        ("", None, []),
    ],
)
def test_revalidation_headers(etag: str | None, last_modified: str | None, expected: H) -> None:
    assert revalidation_headers(etag=etag, last_modified=last_modified) == expected


STORED: H = [
    (b"content-type", b"text/html"),
    (b"content-length", b"100"),
    (b"content-encoding", b"gzip"),
    (b"cache-control", b"max-age=60"),
    (b"date", b"Sun, 06 Nov 1994 08:49:37 GMT"),
    (b"etag", b'"abc"'),
    (b"last-modified", b"Sat, 05 Nov 1994 08:49:37 GMT"),
    (b"vary", b"accept-encoding"),
    (b"expires", b"Sun, 06 Nov 1994 08:50:37 GMT"),
    (b"content-location", b"/a"),
    (b"x-custom", b"1"),
]


def test_not_modified_headers_rfc9110_15_4_5() -> None:
    assert not_modified_headers(STORED) == [
        (b"cache-control", b"max-age=60"),
        (b"date", b"Sun, 06 Nov 1994 08:49:37 GMT"),
        (b"etag", b'"abc"'),
        (b"last-modified", b"Sat, 05 Nov 1994 08:49:37 GMT"),
        (b"vary", b"accept-encoding"),
        (b"expires", b"Sun, 06 Nov 1994 08:50:37 GMT"),
        (b"content-location", b"/a"),
    ]
    assert not_modified_headers([]) == []


def test_merge_not_modified_replaces_fields_rfc9111_4_3_4() -> None:
    fresh: H = [
        (b"cache-control", b"max-age=120"),
        (b"date", b"Mon, 07 Nov 1994 08:49:37 GMT"),
        (b"x-custom", b"2"),
        (b"x-custom", b"3"),
        (b"x-new", b"n"),
    ]
    merged = merge_not_modified(STORED, fresh)
    assert dict_all(merged, b"cache-control") == [b"max-age=120"]
    assert dict_all(merged, b"date") == [b"Mon, 07 Nov 1994 08:49:37 GMT"]
    assert dict_all(merged, b"x-custom") == [b"2", b"3"]  # all instances replaced
    assert dict_all(merged, b"x-new") == [b"n"]
    assert dict_all(merged, b"etag") == [b'"abc"']  # untouched
    assert dict_all(merged, b"content-type") == [b"text/html"]


def test_merge_not_modified_keeps_framing_rfc9111_3_2() -> None:
    fresh: H = [
        (b"content-length", b"0"),
        (b"content-encoding", b"br"),
        (b"transfer-encoding", b"chunked"),
        (b"content-range", b"bytes 0-1/2"),
        (b"connection", b"x-hop"),
        (b"x-hop", b"1"),
        (b"keep-alive", b"timeout=5"),
        (b"age", b"30"),
        (b"set-cookie", b"session=secret"),
    ]
    merged = merge_not_modified(STORED, fresh)
    assert merged == STORED


def test_merge_not_modified_lowercases_new_names() -> None:
    merged = merge_not_modified([(b"etag", b'"a"')], [(b"ETag", b'"b"')])
    assert merged == [(b"etag", b'"b"')]


def dict_all(headers: H, name: bytes) -> list[bytes]:
    return [v for k, v in headers if k == name]

"""Tests for stoker.http.conditional.precondition_failed: If-Match and
If-Unmodified-Since on a stored response (RFC 9110 §13.1.1, §13.1.4, §13.2.2 steps 1-2)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.conditional import precondition_failed
from stoker.http.dates import format_http_date

LM = "Sun, 06 Nov 1994 08:49:37 GMT"
EARLIER = "Sat, 05 Nov 1994 08:49:37 GMT"
LATER = "Mon, 07 Nov 1994 08:49:37 GMT"
H = list[tuple[bytes, bytes]]


@pytest.mark.parametrize(
    ("headers", "etag", "last_modified", "failed"),
    [
        # If-Match: strong comparison (§8.8.3.2)
        ([(b"if-match", b'"abc"')], '"abc"', None, False),
        ([(b"if-match", b'"x", "abc"')], '"abc"', None, False),
        ([(b"if-match", b'"x"'), (b"if-match", b'"abc"')], '"abc"', None, False),
        ([(b"if-match", b'"x"')], '"abc"', None, True),
        ([(b"if-match", b'W/"abc"')], '"abc"', None, True),  # weak never matches strongly
        ([(b"if-match", b'"abc"')], 'W/"abc"', None, True),
        ([(b"if-match", b'"abc"')], None, LM, True),  # nothing to match
        ([(b"if-match", b"abc")], '"abc"', None, True),  # unquoted: no strong validator
        ([(b"if-match", b'"abc')], '"abc"', None, True),  # unterminated
        ([(b"if-match", b"")], '"abc"', None, True),
        ([(b"if-match", b"*")], None, None, False),  # a current representation is stored
        ([(b"if-match", b"*")], 'W/"abc"', None, False),
        # If-Match decides alone: If-Unmodified-Since is not looked at
        ([(b"if-match", b'"abc"'), (b"if-unmodified-since", EARLIER.encode())], '"abc"', LM,
         False),
        ([(b"if-match", b'"x"'), (b"if-unmodified-since", LATER.encode())], '"abc"', LM, True),
        # If-Unmodified-Since (§13.1.4)
        ([(b"if-unmodified-since", EARLIER.encode())], None, LM, True),
        ([(b"if-unmodified-since", LM.encode())], None, LM, False),
        ([(b"if-unmodified-since", LATER.encode())], None, LM, False),
        ([(b"if-unmodified-since", EARLIER.encode())], '"abc"', None, False),  # no date kept
        ([(b"if-unmodified-since", b"garbage")], None, LM, False),  # invalid: ignored
        ([(b"if-unmodified-since", EARLIER.encode())], None, "garbage", False),
        ([(b"if-unmodified-since", EARLIER.encode())] * 2, None, LM, False),  # a list: ignored
        # unconditional, and the other conditionals are not preconditions
        ([], '"abc"', LM, False),
        ([(b"if-none-match", b'"x"'), (b"if-modified-since", LATER.encode())], '"abc"', LM,
         False),
    ],
)
def test_precondition_failed_rfc9110_13_2_2(headers: H, etag: str | None,
                                           last_modified: str | None, failed: bool) -> None:
    assert precondition_failed(headers, etag=etag, last_modified=last_modified) is failed


TAGS = st.text(alphabet="abcxyz019-", min_size=1, max_size=6)
TIMES = st.integers(min_value=0, max_value=4_000_000_000)


@given(TAGS, st.lists(st.tuples(st.booleans(), TAGS), max_size=4), st.integers(0, 4),
       st.booleans())
def test_if_match_holds_exactly_for_the_stored_strong_tag(
        stored: str, others: list[tuple[bool, str]], at: int, split: bool) -> None:
    members = [f'{"W/" if weak else ""}"{tag}"' for weak, tag in others]
    matching = [m for (weak, tag), m in zip(others, members, strict=True)
                if tag == stored and not weak]
    members.insert(min(at, len(members)), f'"{stored}"')
    lines = [(b"if-match", m.encode()) for m in members] if split else [
        (b"if-match", ", ".join(members).encode())]
    assert not precondition_failed(lines, etag=f'"{stored}"', last_modified=None)
    assert precondition_failed(lines, etag=f'W/"{stored}"', last_modified=None)
    without = [m for m in members if m != f'"{stored}"']
    if without and not matching:
        assert precondition_failed([(b"if-match", ", ".join(without).encode())],
                                   etag=f'"{stored}"', last_modified=None)


@given(TIMES, TIMES, st.one_of(st.none(), TAGS))
def test_if_unmodified_since_fails_exactly_when_modified_later(
        since: int, modified: int, etag: str | None) -> None:
    headers = [(b"if-unmodified-since", format_http_date(since).encode())]
    assert precondition_failed(headers, etag=etag, last_modified=format_http_date(modified)) is (
        modified > since)
    # an If-Match that holds decides alone
    if etag is not None:
        assert not precondition_failed([(b"if-match", f'"{etag}"'.encode()), *headers],
                                       etag=f'"{etag}"', last_modified=format_http_date(modified))


@given(st.lists(st.tuples(st.sampled_from([b"if-match", b"if-unmodified-since", b"x"]),
                          st.binary(max_size=40)), max_size=4),
       st.one_of(st.none(), st.text(max_size=20)), st.one_of(st.none(), st.text(max_size=40)))
def test_never_raises(headers: H, etag: str | None, last_modified: str | None) -> None:
    failed = precondition_failed(headers, etag=etag, last_modified=last_modified)
    if not any(name != b"x" for name, _ in headers):
        assert failed is False  # no precondition: nothing fails

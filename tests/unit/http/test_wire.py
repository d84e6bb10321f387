"""Property tests of HTTP/1.1 response heads (stoker.http.wire)."""

from __future__ import annotations

import http

import httptools
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.wire import http1_head, status_line

TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCXYZ0123456789-!#$%&'*+.^_`|~",
                min_size=1, max_size=20).map(str.encode)
VALUE = st.binary(max_size=40).filter(lambda v: b"\r" not in v and b"\n" not in v).map(
    lambda v: bytes(b for b in v if b == 9 or 32 <= b < 127 or b >= 128).strip(b" \t"))
STATUS = st.sampled_from([200, 203, 204, 206, 301, 302, 304, 404, 410, 451, 500, 599])


class _Parsed:
    def __init__(self) -> None:
        self.headers: list[tuple[bytes, bytes]] = []

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))


@given(STATUS, st.lists(st.tuples(TOKEN, VALUE), max_size=8))
def test_a_head_parses_back_to_its_status_and_headers(
        status: int, headers: list[tuple[bytes, bytes]]) -> None:
    head = http1_head(status, headers)
    assert head is not None
    parsed = _Parsed()
    parser = httptools.HttpResponseParser(parsed)
    parser.feed_data(head + b"content-length: 0\r\n\r\n")
    assert parser.get_status_code() == status
    assert parsed.headers[:-1] == [(name.lower(), value) for name, value in headers]


@given(st.sampled_from([b"a\r\nb", b"\n", b"x\x00", b"\x7f"]), st.booleans())
def test_a_header_that_could_break_the_head_is_refused(bad: bytes, in_name: bool) -> None:
    header = (bad, b"v") if in_name else (b"x-name", bad)
    assert http1_head(200, [(b"ok", b"1"), header]) is None
    assert http1_head(200, [(b"", b"v")]) is None


def test_the_status_line_carries_the_standard_reason_phrase() -> None:
    assert status_line(200) == b"HTTP/1.1 200 OK\r\n"
    assert status_line(404) == b"HTTP/1.1 404 " + http.HTTPStatus(404).phrase.encode() + b"\r\n"
    assert status_line(599) == b"HTTP/1.1 599 \r\n"

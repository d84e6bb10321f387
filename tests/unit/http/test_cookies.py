"""One Cookie line without Stoker's own cookies: HTTP/2 crumbs joined with "; " (RFC 9113
§8.2.3), the admin session cookie never forwarded under either of its names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.cookies import (
    OWN_COOKIES,
    SECURE_SESSION_COOKIE,
    SESSION_COOKIE,
    one_cookie_field,
    session_cookie_name,
)

SESSION = SESSION_COOKIE.encode()
SECURE = SECURE_SESSION_COOKIE.encode()


@pytest.mark.parametrize(("headers", "expected"), [
    ([(b"host", b"a"), (b"cookie", b"a=1"), (b"accept", b"*/*"), (b"cookie", b"b=2")],
     [(b"host", b"a"), (b"cookie", b"a=1; b=2"), (b"accept", b"*/*")]),
    ([(b"cookie", SESSION + b"=s; theme=dark")], [(b"cookie", b"theme=dark")]),
    ([(b"cookie", b"theme=dark"), (b"Cookie", SECURE + b"=s")], [(b"cookie", b"theme=dark")]),
    ([(b"cookie", SESSION + b"=s"), (b"x", b"1")], [(b"x", b"1")]),
    ([(b"cookie", b"a=1;b=2;;")], [(b"cookie", b"a=1;b=2;;")]),
    ([(b"cookie", b"a=1;;b=2"), (b"cookie", b";c=3")], [(b"cookie", b"a=1; b=2; c=3")]),
    ([(b"cookie", b"a=1;;" + SESSION + b"=s")], [(b"cookie", b"a=1")]),
    ([(b"cookie", b"x" + SESSION + b"=s; " + SESSION.upper() + b"=t")],
     [(b"cookie", b"x" + SESSION + b"=s; " + SESSION.upper() + b"=t")]),
    ([(b"cookie", b" " + SESSION + b" =s")], []),
    ([(b"host", b"a")], [(b"host", b"a")]),
])
def test_one_cookie_field(headers: list[tuple[bytes, bytes]],
                          expected: list[tuple[bytes, bytes]]) -> None:
    assert one_cookie_field(headers) == expected


@pytest.mark.parametrize("line", [b"a=1;   b=2", b"a=x" + SESSION + b"; b=" + SESSION])
def test_a_single_line_with_nothing_to_drop_is_returned_as_it_came(line: bytes) -> None:
    headers = [(b"cookie", line)]
    assert one_cookie_field(headers) is headers


def test_the_session_cookie_is_host_prefixed_over_https_only() -> None:
    assert session_cookie_name(True) == "__Host-stoker_session"
    assert session_cookie_name(False) == "stoker_session"
    assert {SESSION, SECURE} == OWN_COOKIES


NAME = st.sampled_from([b"a", b"theme", b"b", SESSION, SECURE])
PAIR = st.tuples(NAME, st.sampled_from([b"1", b"x=y", b""])).map(lambda p: p[0] + b"=" + p[1])
LINE = st.lists(PAIR, min_size=1, max_size=4).map(b"; ".join)
OTHER = st.tuples(st.sampled_from([b"host", b"accept", b"x-a"]), st.sampled_from([b"1", b"2"]))


@given(st.lists(st.one_of(LINE.map(lambda line: (b"cookie", line)), OTHER), max_size=8))
def test_crumbs_become_one_line_in_order_without_own_cookies(
        headers: list[tuple[bytes, bytes]]) -> None:
    out = one_cookie_field(headers)
    sent = [pair for name, value in headers if name == b"cookie"
            for pair in value.split(b"; ")]
    wanted = [pair for pair in sent if pair.partition(b"=")[0] not in OWN_COOKIES]
    lines = [value for name, value in out if name == b"cookie"]
    assert lines == ([b"; ".join(wanted)] if wanted else [])
    assert [field for field in out if field[0] != b"cookie"] == [
        field for field in headers if field[0] != b"cookie"]
    if wanted:  # where the first Cookie line was
        first = next(i for i, (name, _) in enumerate(headers) if name == b"cookie")
        assert out[first] == (b"cookie", lines[0])

"""Reading a request's head (as an ASGI scope carries it): the forwarded view, framing,
limits, versions, the host."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.forwarded import TrustedProxies
from stoker.origin.context import RequestContext
from stoker.proxy.request import (
    MAX_HEADERS,
    BadRequest,
    HeadersTooLarge,
    RequestHead,
    as_forwarded,
    declares_body,
    head_of,
    parse_request,
)

NAMES = st.sampled_from([b"accept-language", b"cookie", b"x-a", b"host", b"content-length",
                         b"authorization", b"accept"])
FIELDS = st.lists(st.tuples(NAMES, st.sampled_from([b"1", b"fr", b"a=b"])), max_size=8)


@given(FIELDS, st.lists(NAMES, max_size=3), st.sampled_from([b", ", b",", b" ,\t"]))
def test_the_forwarded_view_drops_exactly_what_connection_names(
        fields: list[tuple[bytes, bytes]], named: list[bytes], separator: bytes) -> None:
    connection = [(b"connection", separator.join(name.upper() for name in named))]
    view = as_forwarded([*fields, *connection])
    kept = {b"host", b"content-length", b"transfer-encoding", b"connection"}
    dropped = set(named) - kept
    assert view == [(name, value) for name, value in [*fields, *connection]
                    if name not in dropped]


def asgi_head(**changes: Any) -> RequestHead:
    """The head of a scope with ``changes``."""
    base: dict[str, Any] = {"type": "http", "http_version": "1.1", "method": "GET",
                            "scheme": "http", "path": "/p", "raw_path": b"/p",
                            "query_string": b"", "headers": [(b"host", b"a.test")],
                            "client": ("192.0.2.1", 5000)}
    return head_of({**base, **changes})


@pytest.mark.parametrize(("headers", "declared"), [
    ([], False), ([(b"content-length", b"0")], False), ([(b"content-length", b"3")], True),
    ([(b"transfer-encoding", b"chunked")], True),
])
def test_declares_body(headers: list[tuple[bytes, bytes]], declared: bool) -> None:
    assert declares_body(headers) is declared


def test_the_view_keeps_framing_the_server_read_the_body_by() -> None:
    request = parse_request(asgi_head(headers=[(b"host", b"a.test"), (b"content-length", b"3"),
                                           (b"connection", b"content-length, cookie"),
                                           (b"cookie", b"a=1")]), "d")
    assert request.declares_body
    assert request.headers == [(b"host", b"a.test"), (b"content-length", b"3"),
                               (b"connection", b"content-length, cookie")]


@pytest.mark.parametrize(("host", "scheme", "expected"), [
    (b"A.test:80", "http", "a.test"), (b"a.test:443", "https", "a.test"),
    (b"a.test:8080", "http", "a.test:8080"), (b"a.test:443", "http", "a.test:443"),
])
def test_the_host_is_the_keys(host: bytes, scheme: str, expected: str) -> None:
    assert parse_request(asgi_head(headers=[(b"host", host)], scheme=scheme), "d").host == expected


@pytest.mark.parametrize(("changes", "status"), [
    ({"http_version": "0.9"}, 400),
    ({"http_version": "1.0", "headers": [(b"transfer-encoding", b"chunked")]}, 400),
    ({"http_version": "1", "headers": [(b"transfer-encoding", b"chunked")]}, 400),
    ({"headers": [(b"host", b"a.test"), *[(b"x", b"y")] * MAX_HEADERS]}, 431),
    ({"headers": [(b"host", b"a.test"), (b"x", b"y" * 70_000)]}, 431),
])
def test_refusals(changes: dict[str, Any], status: int) -> None:
    with pytest.raises(BadRequest) as refused:
        parse_request(asgi_head(**changes), "d")
    assert refused.value.status == status
    assert isinstance(refused.value, HeadersTooLarge) is (status == 431)


def test_granians_http10_is_read_as_http10() -> None:
    request = parse_request(asgi_head(http_version="1", headers=[]), "default.test")
    assert request.host == "default.test"


HOSTILE = [(b"host", b"a.test"), (b"cookie", b"stoker_session=s1; theme=dark"),
           (b"cookie", b"__Host-stoker_session=s2; lang=fr"),
           (b"forwarded", b"for=198.51.100.1;host=evil.example;proto=https"),
           (b"x-original-url", b"/admin"), (b"x-http-method-override", b"DELETE"),
           (b"x-forwarded-for", b"203.0.113.7")]


@pytest.mark.parametrize("peer", ["192.0.2.1", "127.0.0.1"])
def test_the_forwarded_view_has_one_cookie_line_and_no_session_or_override_fields(
        peer: str) -> None:
    request = parse_request(asgi_head(headers=HOSTILE, client=(peer, 5000)), "d",
                            TrustedProxies())
    assert request.headers == [(b"host", b"a.test"), (b"cookie", b"theme=dark; lang=fr"),
                               (b"x-forwarded-for", b"203.0.113.7")]
    assert request.scheme == ("https" if peer == "127.0.0.1" else "http")  # read first


def test_a_trusted_proxy_forwards_its_chain_and_keeps_only_the_kept_overrides() -> None:
    kept = {b"forwarded", b"x-original-url"}
    trusted = parse_request(asgi_head(headers=HOSTILE, client=("127.0.0.1", 1)), "d",
                            TrustedProxies(), kept=kept)
    untrusted = parse_request(asgi_head(headers=HOSTILE), "d", TrustedProxies(), kept=kept)
    assert trusted.forwarded_for == ("203.0.113.7",) and trusted.client == "203.0.113.7"
    assert untrusted.forwarded_for == () and untrusted.client == "192.0.2.1"
    assert [name for name, _ in trusted.headers] == [
        b"host", b"cookie", b"forwarded", b"x-original-url", b"x-forwarded-for"]
    assert [name for name, _ in untrusted.headers] == [b"host", b"cookie", b"x-forwarded-for"]


def test_the_context_carries_the_client_trusted_proxies_name() -> None:
    forwarded = [(b"host", b"a.test"), (b"x-forwarded-for", b"203.0.113.9")]
    through_proxy = asgi_head(headers=forwarded, client=("10.0.0.1", 5000))
    trusted = TrustedProxies(("10.0.0.0/8",))
    assert parse_request(through_proxy, "d", trusted).context.client == "203.0.113.9"
    assert parse_request(through_proxy, "d").context.client == "10.0.0.1"
    context = RequestContext()  # the access log's, handed in
    assert parse_request(through_proxy, "d", trusted, context=context).context is context
    assert context.client == "203.0.113.9"

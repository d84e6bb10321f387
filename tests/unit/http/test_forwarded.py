"""Scheme and client address behind trusted proxies (RFC 7239, X-Forwarded-*)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.forwarded import (
    OVERRIDE_FIELDS,
    TrustedProxies,
    client_chain,
    forwarded_client,
    forwarded_elements,
    forwarded_field,
    forwarded_node,
    forwarded_scheme,
    forwarded_value,
    parse_address,
    without_overrides,
)

LOOPBACK = TrustedProxies()
LB = TrustedProxies(["10.0.0.0/8", "127.0.0.1"])


@pytest.mark.parametrize(("text", "expected"), [
    ("1.2.3.4", "1.2.3.4"), (" 1.2.3.4 ", "1.2.3.4"), ("1.2.3.4:8080", "1.2.3.4"),
    ("[2001:db8::1]:443", "2001:db8::1"), ('"[2001:db8::1]"', "2001:db8::1"),
    ("2001:db8::1", "2001:db8::1"), ("::ffff:10.1.2.3", "10.1.2.3"),
    ("unknown", None), ("_hidden", None), ("", None), ("1.2.3", None),
])
def test_parse_address(text: str, expected: str | None) -> None:
    parsed = parse_address(text)
    assert (str(parsed) if parsed is not None else None) == expected


def test_default_trusts_loopback_only() -> None:
    assert LOOPBACK.trusts("127.0.0.1") and LOOPBACK.trusts("127.9.9.9") and LOOPBACK.trusts("::1")
    assert not LOOPBACK.trusts("10.0.0.1")
    assert not LOOPBACK.trusts(None) and not LOOPBACK.trusts("garbage")
    assert not TrustedProxies(()).trusts("127.0.0.1")


@pytest.mark.parametrize(("proto", "forwarded", "expected"), [
    ([], [], "http"),
    ([b"https"], [], "https"),
    ([b"HTTPS"], [], "https"),
    ([b"https, http"], [], "https"),
    ([b"javascript"], [], "http"),
    ([], [b"for=1.2.3.4;proto=https"], "https"),
    ([], [b'for="[::1]";proto=https, for=5.6.7.8;proto=http'], "https"),
    ([], [b"proto=ftp"], "http"),
    ([b"http"], [b"proto=https"], "http"),  # X-Forwarded-Proto wins
])
def test_forwarded_scheme(proto: list[bytes], forwarded: list[bytes], expected: str) -> None:
    assert forwarded_scheme("http", proto, forwarded) == expected


def test_forwarded_elements_parse_parameters() -> None:
    assert forwarded_elements([b'For="[2001:db8::1]:80";Proto=https;by=x, for=1.2.3.4']) == [
        {"for": "[2001:db8::1]:80", "proto": "https", "by": "x"}, {"for": "1.2.3.4"}]


@pytest.mark.parametrize(("peer", "chain", "expected"), [
    ("10.0.0.5", ["203.0.113.7"], "203.0.113.7"),
    ("10.0.0.5", ["198.51.100.1", "203.0.113.7"], "203.0.113.7"),  # spoofed left hop ignored
    ("10.0.0.5", ["203.0.113.7", "10.0.0.9"], "203.0.113.7"),  # two proxies
    ("10.0.0.5", ["10.0.0.8", "10.0.0.9"], "10.0.0.8"),  # all trusted: leftmost
    ("10.0.0.5", ["garbage", "10.0.0.9"], "10.0.0.9"),  # walk ends at an unparseable hop
    ("10.0.0.5", [], "10.0.0.5"),
    ("203.0.113.50", ["1.1.1.1"], "203.0.113.50"),  # untrusted peer: its word is not taken
])
def test_forwarded_client(peer: str, chain: list[str], expected: str) -> None:
    assert forwarded_client(peer, chain, LB) == expected


def test_client_chain_prefers_x_forwarded_for() -> None:
    assert client_chain([b"1.1.1.1, 2.2.2.2", b"3.3.3.3"], [b"for=9.9.9.9"]) == [
        "1.1.1.1", "2.2.2.2", "3.3.3.3"]
    assert client_chain([], [b"for=9.9.9.9;proto=https, for=8.8.8.8"]) == ["9.9.9.9", "8.8.8.8"]


addresses = st.ip_addresses().map(str)


@given(peer=addresses, chain=st.lists(addresses, max_size=6))
def test_client_is_the_peer_or_a_hop(peer: str, chain: list[str]) -> None:
    client = forwarded_client(peer, chain, LB)
    assert client == peer or client in {str(parse_address(hop)) for hop in chain}
    if not LB.trusts(peer):
        assert client == peer


@given(st.lists(st.binary(max_size=40), max_size=3), st.lists(st.binary(max_size=40), max_size=3))
def test_scheme_parsing_never_fails_on_garbage(proto: list[bytes], fwd: list[bytes]) -> None:
    assert forwarded_scheme("http", proto, fwd) in {"http", "https"}
    client_chain(proto, fwd)


@pytest.mark.parametrize(("hop", "node"), [
    ("203.0.113.7", "203.0.113.7"), ("203.0.113.7:4711", "203.0.113.7"),
    ("2001:db8::1", '"[2001:db8::1]"'), ('"[2001:db8::1]:443"', '"[2001:db8::1]"'),
    ("::ffff:10.1.2.3", "10.1.2.3"), ("unknown", "unknown"), ("_hidden.1-x", "_hidden.1-x"),
    ("evil.example", "unknown"), ('a";host=evil', "unknown"), ("_", "unknown"), ("", "unknown"),
])
def test_forwarded_node(hop: str, node: str) -> None:
    assert forwarded_node(hop) == node


@pytest.mark.parametrize(("text", "value"), [
    ("a.test", "a.test"), ("a.test:8080", '"a.test:8080"'), ("[::1]:80", '"[::1]:80"'),
    ("https", "https"), ('a"b\\c', '"a\\"b\\\\c"'),
])
def test_forwarded_value(text: str, value: str) -> None:
    assert forwarded_value(text) == value


@pytest.mark.parametrize(("previous", "chain", "peer", "field"), [
    ([], [], "192.0.2.9", b"for=192.0.2.9;host=\"a.test:8080\";proto=https"),
    ([], ["203.0.113.7", "2001:db8::1"], "127.0.0.1",
     b'for=203.0.113.7;host="a.test:8080";proto=https, for="[2001:db8::1]", for=127.0.0.1'),
    ([], [], None, b'host="a.test:8080";proto=https'),
    ([b"for=1.2.3.4;host=lb.test", b"for=5.6.7.8"], ["ignored"], "10.0.0.1",
     b'for=1.2.3.4;host=lb.test, for=5.6.7.8, for=10.0.0.1;host="a.test:8080";proto=https'),
])
def test_forwarded_field(previous: list[bytes], chain: list[str], peer: str | None,
                         field: bytes) -> None:
    assert forwarded_field(previous, chain, peer, scheme="https", host="a.test:8080") == field


@given(st.lists(st.text(max_size=12), max_size=4), st.text(max_size=12))
def test_stokers_forwarded_reads_back_as_what_it_says(chain: list[str], peer: str) -> None:
    """Whatever hops a trusted proxy sent, the field parses as one element per hop, each
    ``for=`` a node, the first naming the request's host and scheme and nothing else."""
    field = forwarded_field([], chain, peer or None, scheme="https", host="a.test:8080")
    elements = forwarded_elements([field])
    assert len(elements) == max(1, len(chain) + bool(peer))
    assert elements[0]["host"] == "a.test:8080" and elements[0]["proto"] == "https"
    assert [set(e) for e in elements[1:]] == [{"for"}] * (len(elements) - 1)
    assert not any(e.get("host", "a.test:8080") != "a.test:8080" for e in elements)


OVERRIDES = sorted(OVERRIDE_FIELDS)


@pytest.mark.parametrize("trusted_peer", [True, False])
def test_override_fields_are_dropped_and_kept_only_from_a_trusted_peer(
        trusted_peer: bool) -> None:
    headers = [(b"host", b"a.test"), *((name.upper(), b"v") for name in OVERRIDES),
               (b"x-forwarded-for", b"1.2.3.4")]
    assert without_overrides(headers, trusted_peer=trusted_peer) == [
        (b"host", b"a.test"), (b"x-forwarded-for", b"1.2.3.4")]
    kept = without_overrides(headers, trusted_peer=trusted_peer, kept={b"x-original-url"})
    assert [name for name, _ in kept] == (
        [b"host", b"X-ORIGINAL-URL", b"x-forwarded-for"] if trusted_peer
        else [b"host", b"x-forwarded-for"])

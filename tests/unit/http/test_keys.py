"""Tests for stoker.http.keys (RFC 9111 §2 primary key, §4.1 secondary key)."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from random import Random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.keys import (
    cache_target,
    normalise_field_value,
    primary_key,
    select_variant,
    url_from_parts,
    variant_of,
)


def key(
    host: str = "example.com",
    path: str = "/p",
    query: str = "",
    scheme: str = "https",
    ignore: tuple[str, ...] = (),
) -> str:
    return primary_key(
        version="v1", scheme=scheme, host=host, path=path, query=query, ignore_query=ignore
    )


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, "v1|https://example.com/p"),
        ({"host": "Example.COM"}, "v1|https://example.com/p"),
        # RFC 9110 §4.2.3: default port is equivalent to none
        ({"host": "example.com:443"}, "v1|https://example.com/p"),
        ({"host": "example.com:80", "scheme": "http"}, "v1|http://example.com/p"),
        ({"host": "example.com:80"}, "v1|https://example.com:80/p"),
        ({"host": "example.com:8443"}, "v1|https://example.com:8443/p"),
        ({"host": "example.com:"}, "v1|https://example.com/p"),
        ({"host": "[::1]:443"}, "v1|https://[::1]/p"),
        ({"host": "[::1]"}, "v1|https://[::1]/p"),
        ({"host": "[::1]:8080"}, "v1|https://[::1]:8080/p"),
        ({"scheme": "HTTPS"}, "v1|https://example.com/p"),
        ({"path": ""}, "v1|https://example.com/"),
        ({"path": "/A%2fB"}, "v1|https://example.com/A%2fB"),  # path untouched
        # query: sorted by name, stable for equal names, empty members dropped
        ({"query": "b=2&a=1"}, "v1|https://example.com/p?a=1&b=2"),
        ({"query": "a=2&b=1&a=1"}, "v1|https://example.com/p?a=2&a=1&b=1"),
        ({"query": "&&b&a=&"}, "v1|https://example.com/p?a=&b"),
        ({"query": "&&"}, "v1|https://example.com/p"),
        ({"query": "q=a%20b&Q=x"}, "v1|https://example.com/p?Q=x&q=a%20b"),
        # ignore_query: fnmatch globs, case-sensitive
        (
            {"query": "utm_source=x&id=3&utm_medium=y", "ignore": ("utm_*",)},
            "v1|https://example.com/p?id=3",
        ),
        (
            {"query": "UTM_source=x&id=3", "ignore": ("utm_*",)},
            "v1|https://example.com/p?UTM_source=x&id=3",
        ),
        ({"query": "fbclid=1&gclid=2", "ignore": ("fbclid", "gclid")}, "v1|https://example.com/p"),
        ({"query": "a=1&b=2", "ignore": ("?",)}, "v1|https://example.com/p"),
    ],
)
def test_primary_key(kwargs: dict[str, object], expected: str) -> None:
    assert key(**kwargs) == expected  # type: ignore[arg-type]


def test_version_separates_keys() -> None:
    a = primary_key(version="1", scheme="https", host="h", path="/", query="")
    b = primary_key(version="2", scheme="https", host="h", path="/", query="")
    assert a != b


def test_url_from_parts() -> None:
    assert (
        url_from_parts("https", "Example.com:443", "/p", "b=2&a=1")
        == "https://example.com/p?b=2&a=1"
    )
    assert url_from_parts("http", "example.com:8080", "/", "") == "http://example.com:8080/"


names = st.text(alphabet="abcdefghij_", min_size=1, max_size=6)
values = st.text(alphabet="xyz019%-", max_size=5)


@st.composite
def queries(draw: st.DrawFn) -> list[str]:
    unique = draw(st.lists(names, unique=True, max_size=8))
    return [f"{n}={draw(values)}" for n in unique]


@given(queries(), st.randoms())
def test_key_is_order_insensitive(members: list[str], random: Random) -> None:
    shuffled = list(members)
    random.shuffle(shuffled)
    assert key(query="&".join(members)) == key(query="&".join(shuffled))


@given(queries(), st.lists(st.sampled_from(["a*", "b", "*_", "c?", "zz"]), max_size=3))
def test_ignore_query_keeps_other_params(members: list[str], ignore: list[str]) -> None:
    kept = [m for m in members if not any(fnmatchcase(m.split("=")[0], g) for g in ignore)]
    assert key(query="&".join(members), ignore=tuple(ignore)) == key(query="&".join(kept))


@given(queries(), queries(), st.lists(st.sampled_from(["a*", "b", "*_", "zz"]), max_size=2))
def test_one_key_is_one_target_sent_to_the_origin(left: list[str], right: list[str],
                                                  ignore: list[str]) -> None:
    """What the key leaves out (ignored members, member order) the origin never sees:
    requests that share a key are sent as one target, and the target keeps the key."""
    same_key = key(query="&".join(left), ignore=tuple(ignore)) == key(
        query="&".join(right), ignore=tuple(ignore))
    same_target = cache_target("/p", "&".join(left), tuple(ignore)) == cache_target(
        "/p", "&".join(right), tuple(ignore))
    assert same_key == same_target
    target = cache_target("/p", "&".join(left), tuple(ignore))
    path, _, query = target.partition("?")
    assert key(path=path, query=query) == key(query="&".join(left), ignore=tuple(ignore))


def test_cache_target() -> None:
    assert cache_target("/p", "utm_source=x&b=2&a=1", ("utm_*",)) == "/p?a=1&b=2"
    assert cache_target("/p", "utm_source=x", ("utm_*",)) == "/p"
    assert cache_target("", "") == "/"


def test_variant_of_empty_vary() -> None:
    assert variant_of((), [(b"accept", b"x")]) == ""


def test_variant_of_normalises_rfc9111_4_1() -> None:
    a = variant_of(("accept-encoding",), [(b"accept-encoding", b"gzip,   br")])
    b = variant_of(("accept-encoding",), [(b"accept-encoding", b" gzip, \t br ")])
    c = variant_of(
        ("accept-encoding",), [(b"accept-encoding", b"gzip"), (b"accept-encoding", b"br")]
    )
    assert a == b == c == 'accept-encoding="br, gzip"'


@pytest.mark.parametrize(
    "value",
    [b"gzip, br", b"br,gzip", b"BR, GZIP", b" Gzip ,\tbr ", b"br, , gzip", b"gzip,br,"],
)
def test_accept_encoding_order_case_and_whitespace_are_irrelevant(value: bytes) -> None:
    assert variant_of(("accept-encoding",), [(b"accept-encoding", value)]) == (
        'accept-encoding="br, gzip"'
    )


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (b"gzip", b"gzip, deflate"),
        (b"gzip, deflate, br", b"br, gzip, zstd"),
        (b"deflate", b"identity"),
        (b"br;q=0, gzip", b"x-gzip"),
        (b"*", b"br, gzip"),
    ],
)
def test_accept_encoding_counts_as_the_offer_made_to_the_origin(left: bytes,
                                                                right: bytes) -> None:
    vary = ("accept-encoding",)
    assert variant_of(vary, [(b"accept-encoding", left)]) == (
        variant_of(vary, [(b"accept-encoding", right)]))


def test_accept_language_weights_survive_normalisation() -> None:
    vary = ("Accept-Language",)
    one = variant_of(vary, [(b"accept-language", b"en-GB ; q=0.8, fr")])
    two = variant_of(vary, [(b"accept-language", b"FR,en-gb;q=0.8")])
    other = variant_of(vary, [(b"accept-language", b"fr;q=0.8, en-gb")])
    assert one == two == 'accept-language="en-gb;q=0.8,fr"'
    assert other != one


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        (b"text/html , application/json", b"text/html,application/json", True),
        (b"text/html;  q=0.9", b"text/html ;q=0.9", True),
        (b"a   b", b"a b", True),
        (b"  x  ", b"x", True),
        (b"Text/HTML", b"text/html", False),  # case kept outside the two list fields
        (b"a, b", b"b, a", False),  # order kept outside the two list fields
        (b'"a , b"', b'"a,b"', False),  # quoted-strings kept verbatim
        (b"a b", b"ab", False),
    ],
)
def test_other_fields_normalise_whitespace_only(left: bytes, right: bytes, same: bool) -> None:
    assert (variant_of(("accept",), [(b"accept", left)])
            == variant_of(("accept",), [(b"accept", right)])) is same


codings = st.lists(
    st.from_regex(r"[A-Za-z0-9*-]{1,6}(;q=[01](\.[0-9])?)?", fullmatch=True), min_size=1, max_size=5
)


@given(codings, st.randoms(), st.sampled_from(["accept-encoding", "accept-language"]))
def test_member_permutations_share_a_variant(
    members: list[str], rng: Random, name: str
) -> None:
    shuffled = list(members)
    rng.shuffle(shuffled)
    spaced = [f" {member.upper()}\t" for member in shuffled]
    one = variant_of((name,), [(name.encode(), ", ".join(members).encode())])
    two = variant_of((name,), [(name.encode(), ",".join(spaced).encode())])
    split = variant_of((name,), [(name.encode(), member.encode()) for member in shuffled])
    assert one == two == split


def test_variant_of_absent_differs_from_empty() -> None:
    absent = variant_of(("cookie",), [])
    empty = variant_of(("cookie",), [(b"cookie", b"")])
    assert absent == "cookie"
    assert empty == 'cookie=""'
    assert absent != empty


def test_variant_of_is_unambiguous() -> None:
    # A value containing the separators must not collide with two headers.
    vary = ("a", "b")
    one = variant_of(vary, [(b"a", b'x"; b="y')])
    two = variant_of(vary, [(b"a", b"x"), (b"b", b"y")])
    assert one != two


def test_variant_of_name_order_and_case_irrelevant() -> None:
    headers = [(b"a", b"1"), (b"b", b"2")]
    assert variant_of(("b", "A"), headers) == variant_of(("a", "b"), headers)


header_values = st.one_of(st.none(), st.binary(max_size=6))


def _canon(value: bytes | None) -> str | None:
    return None if value is None else normalise_field_value("a", [value])


def _two(a: bytes | None, b: bytes | None) -> list[tuple[bytes, bytes]]:
    return [(name, value) for name, value in ((b"a", a), (b"b", b)) if value is not None]


@given(header_values, header_values, header_values, header_values)
def test_variant_of_injective(
    a1: bytes | None, b1: bytes | None, a2: bytes | None, b2: bytes | None
) -> None:
    # Equal encodings iff equal normalised values (absent distinct from empty).
    same = variant_of(("a", "b"), _two(a1, b1)) == variant_of(("a", "b"), _two(a2, b2))
    assert same == ((_canon(a1), _canon(b1)) == (_canon(a2), _canon(b2)))


@dataclass
class Entry:
    vary: tuple[str, ...]
    variant: str
    response_time: float
    name: str = ""


def test_select_variant_rfc9111_4_1() -> None:
    gzip = [(b"accept-encoding", b"gzip")]
    entries = [
        Entry(("accept-encoding",), variant_of(("accept-encoding",), gzip), 10, "gzip-old"),
        Entry(("accept-encoding",), variant_of(("accept-encoding",), gzip), 20, "gzip-new"),
        Entry(("accept-encoding",), variant_of(("accept-encoding",), []), 30, "identity"),
        Entry((), "", 5, "plain"),
    ]
    chosen = select_variant(entries, gzip)
    assert chosen is not None and chosen.name == "gzip-new"
    chosen = select_variant(entries, [])
    assert chosen is not None and chosen.name == "identity"
    chosen = select_variant(entries, [(b"accept-encoding", b"br")])
    assert chosen is not None and chosen.name == "plain"  # no Vary: matches anything
    assert select_variant(entries[:3], [(b"accept-encoding", b"br")]) is None
    assert select_variant([], gzip) is None


def test_select_variant_tie_keeps_first() -> None:
    entries = [Entry((), "", 1, "first"), Entry((), "", 1, "second")]
    chosen = select_variant(entries, [])
    assert chosen is not None and chosen.name == "first"


def test_variants_to_drop_keeps_at_most_the_limit() -> None:
    from stoker.http.keys import variants_to_drop

    assert variants_to_drop(["a", "b", "c"], "d", 3) == ["a"]
    assert variants_to_drop(["a", "b", "c"], "b", 3) == []  # replacing adds nothing
    assert variants_to_drop(["a", "b", "c", "d"], "e", 2) == ["a", "b", "c"]
    assert variants_to_drop([], "a", 1) == []
    assert variants_to_drop(["a"], "b", 1) == ["a"]

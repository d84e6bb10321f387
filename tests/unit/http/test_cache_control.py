"""Tests for stoker.http.cache_control (RFC 9111 §5.2, §1.2.2, §4.2.1; RFC 5861)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.cache_control import (
    EMPTY,
    CacheControl,
    parse_cache_control,
    parse_targeted,
)

CAP = 2147483648


def test_empty_inputs() -> None:
    assert parse_cache_control(None) is EMPTY
    assert parse_cache_control("") == EMPTY
    assert parse_cache_control(" , ,, ") == EMPTY
    assert not EMPTY.present
    assert CacheControl() == EMPTY


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # RFC 9111 §5.2.2 response directives
        ("no-store", {"no_store": True}),
        ("public", {"public": True}),
        ("must-revalidate", {"must_revalidate": True}),
        ("proxy-revalidate", {"proxy_revalidate": True}),
        ("no-transform", {"no_transform": True}),
        ("max-age=60", {"max_age": 60}),
        ("s-maxage=30", {"s_maxage": 30}),
        # RFC 8246
        ("immutable", {"immutable": True}),
        # RFC 5861 §3, §4
        ("stale-while-revalidate=5", {"stale_while_revalidate": 5}),
        ("stale-if-error=600", {"stale_if_error": 600}),
        # RFC 9111 §5.2.1 request directives
        ("only-if-cached", {"only_if_cached": True}),
        ("min-fresh=10", {"min_fresh": 10}),
        ("max-stale=10", {"max_stale": 10}),
        ("max-stale", {"max_stale": CAP}),  # §5.2.1.2: no argument, any staleness
        # §5.2.2.4 / §5.2.2.7 unqualified and qualified forms
        ("no-cache", {"no_cache": True}),
        (
            'no-cache="Set-Cookie, X-Foo"',
            {"no_cache": True, "no_cache_fields": ("set-cookie", "x-foo")},
        ),
        ("no-cache=set-cookie", {"no_cache": True, "no_cache_fields": ("set-cookie",)}),
        ('no-cache=""', {"no_cache": True}),
        ("private", {"private": True}),
        ('private="x-user"', {"private": True, "private_fields": ("x-user",)}),
        # §5.2: names are case-insensitive; quoted-string arguments accepted
        ("MAX-AGE=60", {"max_age": 60}),
        ('max-age="60"', {"max_age": 60}),
        ("No-Store, Public", {"no_store": True, "public": True}),
        # whitespace tolerance
        ("  max-age = 60 ,  public  ", {"max_age": 60, "public": True}),
        ("max-age=60,\tpublic", {"max_age": 60, "public": True}),
        # unknown directives ignored but make the field present
        ("foo, bar=baz, max-age=5", {"max_age": 5}),
        ('ext="a, max-age=99", max-age=5', {"max_age": 5}),  # comma inside quotes
        ('community="UCI"', {}),
        # §4.2.1: first occurrence wins
        ("max-age=60, max-age=10", {"max_age": 60}),
        ("max-age=abc, max-age=10", {"max_age": 0, "invalid": frozenset({"max-age"})}),
        # §1.2.2: cap at 2^31
        ("max-age=2147483649", {"max_age": CAP}),
        ("max-age=99999999999999999999999", {"max_age": CAP}),
        ("max-age=2147483647", {"max_age": 2147483647}),
        ("max-age=007", {"max_age": 7}),
        # §4.2.1: malformed delta → invalid and 0 (stale)
        ("max-age=abc", {"max_age": 0, "invalid": frozenset({"max-age"})}),
        ("max-age=-1", {"max_age": 0, "invalid": frozenset({"max-age"})}),
        ("max-age=1.5", {"max_age": 0, "invalid": frozenset({"max-age"})}),
        ("max-age", {"max_age": 0, "invalid": frozenset({"max-age"})}),
        ("max-age=", {"max_age": 0, "invalid": frozenset({"max-age"})}),
        ('max-age="60', {"max_age": 0, "invalid": frozenset({"max-age"})}),
        ('max-age="60"x', {"max_age": 0, "invalid": frozenset({"max-age"})}),
        ("max-age=60 60", {"max_age": 0, "invalid": frozenset({"max-age"})}),
        ("max-age=٣", {"max_age": 0, "invalid": frozenset({"max-age"})}),  # non-ASCII digit
        ("s-maxage=x", {"s_maxage": 0, "invalid": frozenset({"s-maxage"})}),
        (
            "stale-while-revalidate=x, stale-if-error",
            {
                "stale_while_revalidate": 0,
                "stale_if_error": 0,
                "invalid": frozenset({"stale-while-revalidate", "stale-if-error"}),
            },
        ),
        ("max-stale=x", {"max_stale": 0, "invalid": frozenset({"max-stale"})}),
        ('no-cache="a', {"no_cache": True, "invalid": frozenset({"no-cache"})}),
        # list-valued directives: the most restrictive reading
        ('no-cache="a", no-cache', {"no_cache": True}),
        ('no-cache="a", no-cache="b, a"', {"no_cache": True, "no_cache_fields": ("a", "b")}),
        ('private="a", private', {"private": True}),
        # quoted-pair unescaping (RFC 9110 §5.6.4)
        ('no-cache="a\\"b"', {"no_cache": True, "no_cache_fields": ('a"b',)}),
        (b"max-age=60", {"max_age": 60}),
    ],
)
def test_parse(value: str | bytes, expected: dict[str, Any]) -> None:
    assert parse_cache_control(value) == CacheControl(**expected, present=True)


@pytest.mark.parametrize("value", ["=60", "max age=60", "(", '"quoted"', "a b c"])
def test_no_well_formed_directive_is_not_present(value: str) -> None:
    assert parse_cache_control(value) == EMPTY


@given(st.text())
def test_arbitrary_text_never_raises(value: str) -> None:
    parsed = parse_cache_control(value)
    for seconds in (parsed.max_age, parsed.s_maxage, parsed.stale_if_error, parsed.max_stale):
        assert seconds is None or 0 <= seconds <= CAP


@given(st.binary())
def test_arbitrary_bytes_never_raise(value: bytes) -> None:
    parse_cache_control(value)


DELTA = {
    "max-age": "max_age",
    "s-maxage": "s_maxage",
    "stale-while-revalidate": "stale_while_revalidate",
    "stale-if-error": "stale_if_error",
    "min-fresh": "min_fresh",
    "max-stale": "max_stale",
}
FLAGS = {
    "no-store": "no_store",
    "public": "public",
    "must-revalidate": "must_revalidate",
    "proxy-revalidate": "proxy_revalidate",
    "immutable": "immutable",
    "only-if-cached": "only_if_cached",
    "no-transform": "no_transform",
    "must-understand": "must_understand",
}


@st.composite
def directive_lists(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    deltas = draw(st.dictionaries(st.sampled_from(sorted(DELTA)), st.integers(0, 10**12)))
    flags = draw(st.sets(st.sampled_from(sorted(FLAGS))))
    items: list[str] = []
    for name, seconds in deltas.items():
        spelled = "".join(draw(st.sampled_from([c.lower(), c.upper()])) for c in name)
        quoted = draw(st.booleans())
        items.append(f'{spelled}="{seconds}"' if quoted else f"{spelled}={seconds}")
    items.extend(flags)
    items = draw(st.permutations(items))
    separator = draw(st.sampled_from([",", ", ", " ,", ",\t", " , "]))
    expected: dict[str, Any] = {FLAGS[f]: True for f in flags}
    expected.update({DELTA[n]: min(s, CAP) for n, s in deltas.items()})
    return separator.join(items), expected


@given(directive_lists())
def test_generated_directive_lists_round_trip(case: tuple[str, dict[str, Any]]) -> None:
    value, expected = case
    assert parse_cache_control(value) == CacheControl(**expected, present=bool(value))


# ---------------------------------------------------------------------------
# RFC 9213 §2.1 targeted fields (CDN-Cache-Control) as SF Dictionaries
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("max-age=60, public", CacheControl(max_age=60, public=True, present=True)),
        ("no-store, must-understand",
         CacheControl(no_store=True, must_understand=True, present=True)),
        ("s-maxage=5, stale-while-revalidate=7, stale-if-error=9",
         CacheControl(s_maxage=5, stale_while_revalidate=7, stale_if_error=9, present=True)),
        ("max-age=99999999999", CacheControl(max_age=CAP, present=True)),
        ("none", CacheControl(present=True)),  # unknown directives keep the field
        # A value of the wrong type is ignored, not taken as 0 (no "invalid").
        ('max-age="60"', CacheControl(present=True)),
        ("max-age=60.0", CacheControl(present=True)),
        ("max-age=-1", CacheControl(present=True)),
        ("max-age=?1", CacheControl(present=True)),
        ("max-age=sixty", CacheControl(present=True)),
        ('public="yes", no-store=1', CacheControl(present=True)),
        ("no-store=?0", CacheControl(present=True)),
        ("max-age=60;foo=bar", CacheControl(max_age=60, present=True)),  # params ignored
        ("max-age=60, max-age=5", CacheControl(max_age=5, present=True)),  # SF: last wins
        # no-cache / private are honoured whatever their value
        ("private", CacheControl(private=True, present=True)),
        ('private="Set-Cookie, x"',
         CacheControl(private=True, private_fields=("set-cookie", "x"), present=True)),
        ('no-cache=("a" b)', CacheControl(no_cache=True, no_cache_fields=("a", "b"), present=True)),
        ("no-cache=3", CacheControl(no_cache=True, present=True)),
    ],
)
def test_parse_targeted(value: str, expected: CacheControl) -> None:
    assert parse_targeted(value) == expected


@pytest.mark.parametrize(
    "value", [None, "", "   ", "&&&&&", "Max-Age=60", "max-age=60,", "max-age=6 0", b"a=\xff"]
)
def test_parse_targeted_ignores_invalid_fields(value: str | bytes | None) -> None:
    assert parse_targeted(value) is EMPTY


def test_must_understand_in_cache_control() -> None:
    assert parse_cache_control("no-store, must-understand").must_understand
    assert not parse_cache_control("no-store").must_understand

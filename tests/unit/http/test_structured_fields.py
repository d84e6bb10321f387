"""Tests for stoker.http.structured_fields (RFC 8941 §3.2 Dictionaries, §4.2 parsing)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.structured_fields import BareItem, Member, Params, Token, parse_dictionary


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("   ", {}),
        ("a=1", {"a": Member(1)}),
        ("a=-42, b=0", {"a": Member(-42), "b": Member(0)}),
        ("a=1.5, b=-0.125", {"a": Member(1.5), "b": Member(-0.125)}),
        ('a="x \\"y\\" \\\\"', {"a": Member('x "y" \\')}),
        ("a=tok/en:x", {"a": Member(Token("tok/en:x"))}),
        ("a=*t", {"a": Member(Token("*t"))}),
        ("a=:aGVsbG8=:", {"a": Member(b"hello")}),
        ("a=:aGVsbG8:", {"a": Member(b"hello")}),  # padding is optional
        ("a=?1, b=?0", {"a": Member(True), "b": Member(False)}),
        ("a", {"a": Member(True)}),
        ("a;x=1;y", {"a": Member(True, {"x": 1, "y": True})}),
        ("a=1; x=2", {"a": Member(1, {"x": 2})}),
        (
            'a=(1 b "c");p',
            {"a": Member((Member(1), Member(Token("b")), Member("c")), {"p": True})},
        ),
        ("a=()", {"a": Member(())}),
        ("a=( 1  2 )", {"a": Member((Member(1), Member(2)))}),
        ("a=(1;q=2)", {"a": Member((Member(1, {"q": 2}),))}),
        ("a=1,\tb=2 ,  c", {"a": Member(1), "b": Member(2), "c": Member(True)}),
        ("a=1, b=2, a=3", {"a": Member(3), "b": Member(2)}),  # last value, first position
        ("*k.e_y-2=1", {"*k.e_y-2": Member(1)}),
        ("a=123456789012345", {"a": Member(123456789012345)}),
        ("a=123456789012.123", {"a": Member(123456789012.123)}),
    ],
)
def test_valid_dictionaries(text: str, expected: dict[str, Member]) -> None:
    parsed = parse_dictionary(text)
    assert parsed == expected
    assert parsed is not None and list(parsed) == list(expected)


def test_token_and_string_differ() -> None:
    string_member = parse_dictionary('a="x"')
    token_member = parse_dictionary("a=x")
    assert string_member is not None and token_member is not None
    assert not isinstance(string_member["a"].value, Token)
    assert isinstance(token_member["a"].value, Token)


@pytest.mark.parametrize(
    "text",
    [
        "&&&&&",
        "A=1",  # keys are lower-case
        "1a=1",
        "a=1,",  # trailing comma
        ",a=1",
        "a=1,,b=2",
        "a=1 b=2",
        "a=1;",
        "a=1;B=2",
        "a=",
        "a=1.",
        "a=1.2345",  # at most 3 fraction digits
        "a=1234567890123456",  # integer longer than 15 digits
        "a=1234567890123.1",  # integer part of a decimal longer than 12 digits
        "a=-",
        "a=--1",
        'a="unterminated',
        'a="bad \\n escape"',
        'a="tab\there"',
        "a=:not base64!:",
        "a=:aGVsbG8=",
        "a=?2",
        "a=?",
        "a=(1 2",
        "a=(1,2)",
        "a=(1)x",
        "a=@1",  # RFC 9651 Dates are not RFC 8941
        "a=\u00e9",
        "\ta=1",  # only SP is discarded around the field value
    ],
)
def test_invalid_dictionaries_are_none(text: str) -> None:
    assert parse_dictionary(text) is None


def test_none_and_bytes() -> None:
    assert parse_dictionary(None) is None
    assert parse_dictionary(b"max-age=60") == {"max-age": Member(60)}
    assert parse_dictionary(b"a=\xe9") is None


# ---------------------------------------------------------------------------
# Properties: serialising (RFC 8941 §4.1) then parsing gives the value back.
# ---------------------------------------------------------------------------
KEYS = st.from_regex(r"[a-z*][a-z0-9_\-.*]{0,8}", fullmatch=True)
BARE_ITEMS: st.SearchStrategy[BareItem] = st.one_of(
    st.integers(-(10**15) + 1, 10**15 - 1),
    st.integers(-(10**12) + 1, 10**12 - 1).map(lambda n: n / 8),  # exact in 3 digits
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=10),
    st.from_regex(r"[A-Za-z*][A-Za-z0-9!#$%&'*+\-.^_`|~:/]{0,8}", fullmatch=True).map(Token),
    st.binary(max_size=10),
    st.booleans(),
)
PARAMS = st.dictionaries(KEYS, BARE_ITEMS, max_size=3)
ITEMS = st.builds(Member, BARE_ITEMS, PARAMS)
MEMBERS = st.one_of(
    ITEMS, st.builds(Member, st.lists(ITEMS, max_size=3).map(tuple), PARAMS)
)


def _bare(value: BareItem) -> str:
    if isinstance(value, bool):
        return "?1" if value else "?0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") + (".0" if value.is_integer() else "")
    if isinstance(value, Token):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return ":" + base64.b64encode(value).decode() + ":"


def _params(params: Params) -> str:
    return "".join(f";{key}" if value is True else f";{key}={_bare(value)}"
                   for key, value in params.items())


def _item(member: Member) -> str:
    assert not isinstance(member.value, tuple)
    return _bare(member.value) + _params(member.params)


def _member(member: Member) -> str:
    if isinstance(member.value, tuple):
        inner = " ".join(_item(item) for item in member.value)
        return f"({inner}){_params(member.params)}"
    if member.value is True:
        return _params(member.params)
    return f"={_bare(member.value)}{_params(member.params)}"


def _serialise(members: dict[str, Member]) -> str:
    parts = []
    for key, member in members.items():
        body = _member(member)
        parts.append(key + ("=" + body if isinstance(member.value, tuple) else body))
    return ", ".join(parts)


@given(st.dictionaries(KEYS, MEMBERS, max_size=5))
def test_round_trip(members: dict[str, Member]) -> None:
    assert parse_dictionary(_serialise(members)) == members


@given(st.text(max_size=40))
def test_never_raises(text: str) -> None:
    result = parse_dictionary(text)
    assert result is None or isinstance(result, dict)


@given(st.text(st.sampled_from('abc=1,;()"?:* -.\t'), max_size=30))
def test_never_raises_on_near_miss_syntax(text: str) -> None:
    result = parse_dictionary(text)
    assert result is None or isinstance(result, dict)

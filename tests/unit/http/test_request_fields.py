"""RequestFields: one scan gives what get_joined and get_header give, field by field."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stoker.http.headers import get_header, get_joined, lower_joined
from stoker.http.request_fields import CONDITIONALS, READ, RequestFields

NAMES = [*sorted(READ), b"host", b"user-agent", b"accept", b"x-cookie", b"rangee"]
VALUES = st.binary(max_size=12).filter(lambda value: b"\r" not in value and b"\n" not in value)
HEADS = st.lists(st.tuples(st.sampled_from(NAMES), VALUES), max_size=12)


@given(HEADS)
def test_every_read_field_is_what_a_scan_gives(headers: list[tuple[bytes, bytes]]) -> None:
    fields = RequestFields(headers)
    for name in READ:
        assert fields.joined(name) == get_joined(headers, name)
        assert fields.has(name) == (get_header(headers, name) is not None)
    assert fields.conditional == any(name in CONDITIONALS for name, _ in headers)


@given(HEADS, st.sampled_from(NAMES))
def test_lower_joined_is_get_joined_for_lower_case_names(
        headers: list[tuple[bytes, bytes]], name: bytes) -> None:
    assert lower_joined(headers, name) == get_joined(headers, name)


def test_cache_control_is_parsed_from_every_line() -> None:
    fields = RequestFields([(b"cache-control", b"max-age=5"), (b"cache-control", b"no-store")])
    assert fields.cache_control is not None and fields.cache_control.no_store
    assert RequestFields([(b"pragma", b"no-cache")]).cache_control is None


def test_the_list_is_not_changed() -> None:
    headers = [(b"cookie", b"a=1"), (b"cookie", b"b=2")]
    RequestFields(headers)
    assert headers == [(b"cookie", b"a=1"), (b"cookie", b"b=2")]

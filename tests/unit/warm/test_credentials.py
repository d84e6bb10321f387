"""Warm credentials: the pure parts (names, values, headers) and the book over a store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.clock import FakeClock
from stoker.config.settings.values import credential_names
from stoker.warm.credentials import (
    REFRESH,
    CredentialBook,
    CredentialInfo,
    check_value,
    fingerprint,
    origin_headers,
    with_origin_headers,
)


def test_names_are_kind_and_token_with_header_names_lower_cased() -> None:
    assert credential_names(["header:X-Bypass", " cookie:Age_OK ", "header:x-bypass"]) == (
        "header:x-bypass", "cookie:Age_OK")
    assert credential_names("header:a, cookie:b") == ("header:a", "cookie:b")


@pytest.mark.parametrize("bad", ["x-bypass", "query:a", "header:", "header:a b",
                                 "header:authorization", "header:Cookie", "header:host",
                                 "header:content-length", "cookie:a;b"])
def test_names_that_are_not_credentials_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match=r"credential|expected"):
        credential_names([bad])


@pytest.mark.parametrize(("name", "value"), [
    ("header:x", "a\r\nx-evil: 1"), ("header:x", "a\x00"), ("header:x", ""),
    ("header:x", "é"), ("cookie:c", "a; admin=1"), ("header:x", "a" * 4097), ("header:x", 7)])
def test_values_that_could_change_the_request_are_refused(name: str, value: object) -> None:
    with pytest.raises(ValueError, match="value"):
        check_value(name, value)


def test_a_fingerprint_is_sha256_and_never_the_value() -> None:
    mark = fingerprint("s3cret")
    assert mark.startswith("sha256:") and len(mark) == 23 and "s3cret" not in mark
    assert mark == fingerprint("s3cret") != fingerprint("s3cret ")


def test_headers_carry_allowed_values_and_every_cookie_in_one_header() -> None:
    values = {"header:x-bypass": "yes", "cookie:b": "2", "cookie:a": "1", "header:gone": "x"}
    allowed = ("header:x-bypass", "cookie:a", "cookie:b")
    assert origin_headers(values, allowed) == ((b"x-bypass", b"yes"), (b"cookie", b"a=1; b=2"))
    assert origin_headers(values, ()) == ()


def test_merged_headers_replace_same_names_and_join_cookies() -> None:
    headers = [(b"host", b"s"), (b"x-bypass", b"visitor"), (b"cookie", b"lang=en")]
    extra = ((b"x-bypass", b"yes"), (b"cookie", b"age_ok=1"))
    assert with_origin_headers(headers, extra) == [
        (b"host", b"s"), (b"cookie", b"lang=en; age_ok=1"), (b"x-bypass", b"yes")]
    assert with_origin_headers([(b"host", b"s")], ((b"cookie", b"a=1"),)) == [
        (b"host", b"s"), (b"cookie", b"a=1")]


@given(st.lists(st.tuples(st.sampled_from([b"host", b"accept", b"cookie", b"x-a"]),
                          st.binary(max_size=5)), max_size=6),
       st.lists(st.tuples(st.sampled_from([b"cookie", b"x-a", b"x-b"]),
                          st.binary(min_size=1, max_size=5)), max_size=3, unique_by=lambda h: h[0]))
def test_merging_keeps_every_other_header_and_each_extra_once(
        headers: list[tuple[bytes, bytes]], extra: list[tuple[bytes, bytes]]) -> None:
    merged = with_origin_headers(headers, tuple(extra))
    replaced = {name for name, _ in extra} - {b"cookie"}
    assert [h for h in headers if h[0] not in replaced | {b"cookie"}] == [
        h for h in merged if h[0] not in replaced | {b"cookie"}]
    for name, value in extra:
        if name != b"cookie":
            assert [v for n, v in merged if n == name] == [value]
        else:
            assert any(v.endswith(value) for n, v in merged if n == b"cookie")


class Store:
    """A credential store in memory (the backends have their contract suite)."""

    def __init__(self) -> None:
        self.rows: dict[str, str] = {}
        self.reads = 0
        self.failing = False

    async def put(self, name: str, value: str, now: float) -> None:
        self.rows[name] = value

    async def delete(self, name: str) -> bool:
        return self.rows.pop(name, None) is not None

    async def listed(self) -> Sequence[CredentialInfo]:
        return [CredentialInfo(n, fingerprint(v), 0.0) for n, v in sorted(self.rows.items())]

    async def values(self) -> Mapping[str, str]:
        self.reads += 1
        if self.failing:
            raise ConnectionError("injected")
        return dict(self.rows)


async def test_the_book_reads_the_store_once_per_refresh_and_at_once_after_its_own_change(
        ) -> None:
    store, clock = Store(), FakeClock()
    book = CredentialBook(store, ("header:x-bypass",), clock)
    assert await book.headers() == ()
    assert await book.put("header:x-bypass", "yes") == fingerprint("yes")
    assert await book.headers() == ((b"x-bypass", b"yes"),)
    store.rows["header:x-bypass"] = "changed elsewhere"
    assert await book.headers() == ((b"x-bypass", b"yes"),) and store.reads == 2
    clock.advance(REFRESH)
    store.failing = True
    assert await book.headers() == ((b"x-bypass", b"yes"),)  # the last read, kept
    store.failing = False
    clock.advance(REFRESH)
    assert await book.headers() == ((b"x-bypass", b"changed elsewhere"),)
    with pytest.raises(KeyError):
        await book.put("header:not-allowed", "x")
    with pytest.raises(ValueError, match="value"):
        await book.put("header:x-bypass", "a\nb")
    assert await book.delete("header:x-bypass") and await book.headers() == ()

"""Content codings: the store-time rule, the choice per request, and the served headers."""

from __future__ import annotations

import gzip
import os

import brotli
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.encoding import (
    IDENTITY,
    choose_encoding,
    coded_etag,
    compress,
    compressible,
    origin_offer,
    served_headers,
    stored_coding,
)

BOTH = ("br", "gzip")


@pytest.mark.parametrize(("accept", "available", "expected"), [
    (None, BOTH, IDENTITY),  # no Accept-Encoding: identity, as nginx does
    ("", BOTH, IDENTITY),
    ("identity", BOTH, IDENTITY),
    ("gzip", BOTH, "gzip"),
    ("gzip, deflate, br", BOTH, "br"),
    ("GZIP, BR", BOTH, "br"),
    ("x-gzip", BOTH, "gzip"),
    ("br;q=0, gzip", BOTH, "gzip"),
    ("br;q=0.5, gzip;q=0.8", BOTH, "gzip"),
    ("br;q=0.8, gzip;q=0.8", BOTH, "br"),  # ties go to the smaller form
    ("br", ("gzip",), IDENTITY),
    ("gzip", (), IDENTITY),
    ("*", BOTH, "br"),
    ("*;q=0", BOTH, IDENTITY),  # nothing acceptable: identity
    ("gzip;q=0, *", BOTH, "br"),
    ("br;q=0, *;q=0.5", BOTH, "gzip"),
    ("identity;q=1, gzip;q=0.5", BOTH, IDENTITY),
    ("identity;q=0, gzip;q=0.5", BOTH, "gzip"),
    ("gzip;q=0.001", BOTH, "gzip"),
    ("gzip;q=abc", BOTH, IDENTITY),  # malformed q: refused
    ("gzip;q=2", BOTH, IDENTITY),
    (" gzip ; q=0.5 , ,br;Q=0", BOTH, "gzip"),
    ("deflate, zstd", BOTH, IDENTITY),
])
def test_choose_encoding(accept: str | None, available: tuple[str, ...], expected: str) -> None:
    assert choose_encoding(accept, available) == expected


CODINGS = st.sampled_from(["br", "gzip", "identity", "*", "deflate", "x-gzip", "zstd"])
Q = st.sampled_from(["", ";q=0", ";q=0.5", ";q=1", ";q=0.25", ";q=0.000"])


@given(st.lists(st.tuples(CODINGS, Q), max_size=6),
       st.sampled_from([BOTH, ("br",), ("gzip",), ()]))
def test_choice_is_available_and_never_refused(items: list[tuple[str, str]],
                                               available: tuple[str, ...]) -> None:
    header = ", ".join(name + q for name, q in items)
    chosen = choose_encoding(header, available)
    assert chosen == IDENTITY or chosen in available
    refused = {("gzip" if name == "x-gzip" else name) for name, q in items
               if q in (";q=0", ";q=0.000")}
    if chosen != IDENTITY:
        assert chosen not in refused
        assert chosen in {"gzip" if name == "x-gzip" else name for name, _ in items} or (
            "*" in {name for name, _ in items})


@given(st.sampled_from(["br", "gzip"]), st.sampled_from([BOTH, ("br",), ("gzip",)]))
def test_a_lone_accepted_coding_is_served_when_available(coding: str,
                                                          available: tuple[str, ...]) -> None:
    assert choose_encoding(coding, available) == (coding if coding in available else IDENTITY)


@pytest.mark.parametrize(("accept", "offer"), [
    (None, "identity"),  # no Accept-Encoding: identity, as nginx reads it
    ("", "identity"),
    ("gzip", "gzip"),
    ("gzip, deflate", "gzip"),
    ("gzip, deflate, br", "br, gzip"),
    ("gzip, deflate, br, zstd", "br, gzip"),
    ("br", "br"),
    ("BR;q=0.5, x-gzip", "br, gzip"),
    ("identity", "identity"),
    ("deflate, zstd", "identity"),
    ("br;q=0, gzip", "gzip"),
    ("*", "br, gzip"),
    ("*;q=0", "identity"),
    ("gzip;q=abc", "identity"),  # malformed q: refused
])
def test_origin_offer(accept: str | None, offer: str) -> None:
    assert origin_offer(accept) == offer


@given(st.lists(st.tuples(CODINGS, Q), max_size=6))
def test_the_origin_is_offered_only_what_the_client_accepts(items: list[tuple[str, str]]) -> None:
    header = ", ".join(name + q for name, q in items)
    offer = origin_offer(header)
    assert offer == IDENTITY or set(offer.split(", ")) <= set(BOTH)
    for coding in offer.split(", "):  # whatever the origin picks, the client can read
        refusing_identity = f"{header}, identity;q=0"  # so only `coding` can be chosen
        assert coding == IDENTITY or choose_encoding(refusing_identity, (coding,)) == coding


@pytest.mark.parametrize(("value", "coding"), [
    (None, IDENTITY),
    (b"", IDENTITY),
    (b"identity", IDENTITY),
    (b"gzip", "gzip"),
    (b"X-Gzip", "gzip"),
    (b"br", "br"),
    (b" br ", "br"),
    (b"deflate", None),
    (b"zstd", None),
    (b"gzip, br", None),  # several codings: not decoded
    (b"gzip, identity", "gzip"),
])
def test_stored_coding(value: bytes | None, coding: str | None) -> None:
    headers = [] if value is None else [(b"content-encoding", value)]
    assert stored_coding(headers) == coding


TEXT = [(b"content-type", b"text/html; charset=utf-8")]


@pytest.mark.parametrize(("status", "headers", "size", "expected"), [
    (200, TEXT, 2048, True),
    (200, [(b"content-type", b"application/json")], 2048, True),
    (200, [(b"content-type", b"application/vnd.api+json")], 2048, True),
    (200, [(b"content-type", b"image/svg+xml")], 2048, True),
    (200, [(b"content-type", b"application/javascript")], 2048, True),
    (200, TEXT, 1024, False),  # not above 1 KiB
    (200, [(b"content-type", b"image/png")], 2048, False),
    (200, [], 2048, False),
    (200, [*TEXT, (b"content-encoding", b"gzip")], 2048, False),
    (200, [*TEXT, (b"cache-control", b"max-age=60, no-transform")], 2048, False),
    (404, TEXT, 2048, False),
])
def test_compressible(status: int, headers: list[tuple[bytes, bytes]], size: int,
                      expected: bool) -> None:
    assert compressible(status, headers, size) is expected


def test_compress_makes_br_and_gzip_that_decode_to_the_body() -> None:
    body = b"<p>hello compressible world</p>\n" * 100
    forms = dict(compress(body))
    assert list(forms) == ["br", "gzip"]
    assert brotli.decompress(forms["br"]) == body
    assert gzip.decompress(forms["gzip"]) == body


def test_compress_keeps_only_forms_smaller_than_the_body() -> None:
    assert compress(os.urandom(2048)) == ()  # incompressible: nothing kept


@pytest.mark.parametrize(("etag", "coding", "expected"), [
    ('"abc"', "br", '"abc-br"'),
    ('W/"abc"', "gzip", 'W/"abc-gzip"'),
    ('"abc"', IDENTITY, '"abc"'),
])
def test_coded_etag(etag: str, coding: str, expected: str) -> None:
    assert coded_etag(etag, coding) == expected


def test_served_headers_for_a_coded_form() -> None:
    stored = ((b"content-type", b"text/html"), (b"content-length", b"5000"),
              (b"etag", b'"v1"'), (b"vary", b"Accept-Language"))
    assert served_headers(stored, "br", 900) == (
        (b"content-type", b"text/html"), (b"etag", b'"v1-br"'),
        (b"vary", b"Accept-Language, accept-encoding"),
        (b"content-encoding", b"br"), (b"content-length", b"900"))


def test_served_headers_for_identity_only_add_vary() -> None:
    stored = ((b"content-length", b"5000"), (b"etag", b'"v1"'))
    assert served_headers(stored, IDENTITY, 5000) == (*stored, (b"vary", b"accept-encoding"))
    varied = ((b"vary", b"accept-encoding"),)
    assert served_headers(varied, IDENTITY, 0) == varied

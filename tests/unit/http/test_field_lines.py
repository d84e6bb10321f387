"""Several field lines of a list-valued header are one list (RFC 9110 §5.3): every header
Stoker reads means the same split over lines as joined on one, and the first line never
stands for the whole field.

Property test: a field's members, split over any number of lines at member boundaries
(and with other fields between them), read exactly as the one joined line does, for
``Vary``, ``Cache-Control``, ``Surrogate-Control``, ``CDN-Cache-Control``, ``Connection``
and the tag headers.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stoker.cache.tags import tags_from_headers
from stoker.http.encoding import served_headers
from stoker.http.headers import connection_tokens, field_members, vary_names
from stoker.http.policy import StaleDefaults, decide_storage

Headers = list[tuple[bytes, bytes]]


@st.composite
def split_field(draw: st.DrawFn, name: bytes, members: st.SearchStrategy[str]
                ) -> tuple[Headers, Headers]:
    """The same members as one line, and split over several lines with others between."""
    chosen = draw(st.lists(members, min_size=1, max_size=6))
    joined: Headers = [(name, ", ".join(chosen).encode())]
    cuts = sorted(draw(st.sets(st.integers(1, len(chosen) - 1), max_size=len(chosen) - 1))
                  if len(chosen) > 1 else set())
    lines: Headers = []
    start = 0
    for cut in [*cuts, len(chosen)]:
        lines.append((name, ", ".join(chosen[start:cut]).encode()))
        lines.append((b"x-between", b"1"))
        start = cut
    return joined, lines


VARY_MEMBERS = st.sampled_from(["Accept-Encoding", "Cookie", "Origin", "accept-language",
                                "*", "X-Device"])
CC_MEMBERS = st.sampled_from(["public", "private", "no-store", "no-cache", "max-age=60",
                              "s-maxage=0", "must-revalidate", "stale-while-revalidate=30",
                              'no-cache="set-cookie, x-a"', "max-age=0"])
CONNECTION_MEMBERS = st.sampled_from(["close", "Keep-Alive", "cookie", "accept-language"])
TAG_MEMBERS = st.sampled_from(["post-1", "post-10", "site", "home"])


@given(split_field(b"vary", VARY_MEMBERS))
def test_vary(forms: tuple[Headers, Headers]) -> None:
    joined, lines = forms
    assert vary_names(lines) == vary_names(joined)
    assert served_headers(lines, "br", 3).count((b"vary", b"accept-encoding")) == (
        served_headers(joined, "br", 3).count((b"vary", b"accept-encoding")))


@given(split_field(b"connection", CONNECTION_MEMBERS))
def test_connection(forms: tuple[Headers, Headers]) -> None:
    joined, lines = forms
    assert connection_tokens(lines) == connection_tokens(joined)


@given(st.sampled_from([b"cache-control", b"surrogate-control", b"cdn-cache-control"]),
       st.data())
def test_cache_directives(name: bytes, data: st.DataObject) -> None:
    joined, lines = data.draw(split_field(name, CC_MEMBERS))
    decisions = [decide_storage(method="GET", status=200, request_headers=[],
                                response_headers=[(b"date", b"Tue, 01 Dec 2026 00:00:00 GMT"),
                                                  *headers],
                                request_time=1e9, response_time=1e9, rule=None,
                                defaults=StaleDefaults(swr=0, sie=0, keep=0))
                 for headers in (joined, lines)]
    assert decisions[0] == decisions[1]


@given(st.sampled_from([b"surrogate-key", b"cache-tag"]), st.data())
def test_tags(name: bytes, data: st.DataObject) -> None:
    joined, lines = data.draw(split_field(name, TAG_MEMBERS))
    assert tags_from_headers(lines, (name,)) == tags_from_headers(joined, (name,))


def test_members_split_at_commas_outside_quotes() -> None:
    assert field_members([(b"cache-control", b'no-cache="a, b", max-age=1'),
                          (b"cache-control", b" ,public")],
                         b"cache-control") == ['no-cache="a, b"', "max-age=1", "public"]

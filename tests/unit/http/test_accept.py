"""``Accept`` and a media type (RFC 9110 §12.5.1): the most specific range decides."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stoker.http.accept import accepts

RANGES = st.sampled_from(["text/html", "text/*", "*/*", "application/json", "image/png",
                          "TEXT/HTML", "text/plain"])
QS = st.sampled_from(["", ";q=0", ";q=0.5", ";q=1", ";q=bad", ";level=1"])


def accept(value: str) -> list[tuple[bytes, bytes]]:
    return [(b"accept", value.encode())]


def test_no_accept_field_accepts_everything() -> None:
    assert accepts([], "text/html")


def test_a_browser_accepts_html_and_an_api_client_does_not() -> None:
    assert accepts(accept("text/html,application/xhtml+xml,*/*;q=0.8"), "text/html")
    assert accepts(accept("*/*"), "text/html")
    assert accepts(accept("text/*;q=0.3"), "text/html")
    assert not accepts(accept("application/json"), "text/html")
    assert not accepts(accept(""), "text/html")


def test_the_most_specific_range_decides() -> None:
    assert not accepts(accept("*/*, text/html;q=0"), "text/html")
    assert accepts(accept("text/*;q=0, text/html"), "text/html")
    assert not accepts(accept("text/*;q=0, */*"), "text/html")
    assert not accepts(accept("text/html, text/html;q=0"), "text/html")  # the lower q


@given(st.lists(st.tuples(RANGES, QS), max_size=6))
def test_html_refused_outright_is_never_accepted(members: list[tuple[str, str]]) -> None:
    value = ", ".join(name + q for name, q in [*members, ("text/html", ";q=0")])
    assert not accepts(accept(value), "text/html")


@given(st.lists(st.tuples(RANGES, QS), max_size=6))
def test_without_a_matching_range_nothing_is_accepted(members: list[tuple[str, str]]) -> None:
    unrelated = [(name, q) for name, q in members if name.lower() not in (
        "text/html", "text/*", "*/*")]
    value = ", ".join(name + q for name, q in unrelated)
    assert not accepts(accept(value), "text/html")

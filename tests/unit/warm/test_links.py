"""Tests for stoker.warm.links: page links taken from a home page."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.warm.links import SKIP_LINK_LIMIT, extract_links, skip_reason
from stoker.warm.urls import normalise

HOME = "https://www.example.com/"


@pytest.mark.parametrize(
    ("path", "allow_query", "reason"),
    [
        ("/", False, None),
        ("/blog/", False, None),
        ("/about.html", False, None),
        ("/index.php", False, None),
        ("/v1.2-release/", False, None),
        ("/feed/", False, "feed"),
        ("/blog/feed", False, "feed"),
        ("/comments/RSS", False, "feed"),
        ("/news.atom", False, "feed"),
        ("/wp-admin/", False, "admin"),
        ("/wp-login.php", False, "admin"),
        ("/Admin/users", False, "admin"),
        ("/cart", False, "admin"),
        ("/_next/data", False, "admin"),
        ("/files/report.pdf", False, "file"),
        ("/logo.PNG", False, "file"),
        ("/sitemap.xml", False, "file"),
        ("/search?q=x", False, "query"),
        ("/search?q=x", True, None),
    ],
)
def test_skip_reason(path: str, allow_query: bool, reason: str | None) -> None:
    assert skip_reason(f"https://www.example.com{path}", allow_query=allow_query) == reason


PAGE = """<html><head><link rel="alternate" type="application/rss+xml" href="/feed/"></head>
<body><nav><a href="/">Home</a> <a href="/blog/">Blog</a> <a href='about'>About</a>
<a href="/blog/#top">Blog again</a> <A HREF="https://WWW.EXAMPLE.COM/shop/?">Shop</A>
<a href="/a?b=1&amp;c=2">Query</a> <a href="https://other.example/x">Elsewhere</a>
<a href="http://www.example.com/http">Other scheme</a> <a href="mailto:me@example.com">Mail</a>
<a href="javascript:void(0)">JS</a> <a href="/wp-admin/">Admin</a> <a href="/doc.pdf">PDF</a>
<a>No href</a> <a href="//[broken">Broken</a><map><area href="/area"></map>
<![if !IE]><![foo ]><a href="/after-marked-section">x</a><![endif]></nav></body></html>"""


def test_extract_links_keeps_same_origin_pages_in_order() -> None:
    assert extract_links(PAGE, HOME) == [
        "https://www.example.com/", "https://www.example.com/blog/",
        "https://www.example.com/about", "https://www.example.com/shop/",
        "https://www.example.com/area", "https://www.example.com/after-marked-section"]


def test_the_links_left_out_are_counted_by_reason_once_each() -> None:
    skipped: Counter[str] = Counter({"other_host": 1})
    extract_links(PAGE + '<a href="/feed/">feed again</a><a href="/b.pdf">2</a>', HOME,
                  skipped=skipped)
    # mailto: and javascript: are no pages; the feed is counted once; the caller's
    # own count is kept (other hosts are the caller's to count, through place)
    assert skipped == {"feed": 1, "query": 1, "admin": 1, "file": 2, "other_host": 1}


def test_the_anchors_past_the_cap_are_counted() -> None:
    page = "".join(f'<a href="/p{n}">x</a>' for n in range(5)) + '<a href="/feed">f</a>'
    skipped: Counter[str] = Counter()
    assert len(extract_links(page, HOME, max_links=2, skipped=skipped)) == 2
    assert skipped == {SKIP_LINK_LIMIT: 4}
    skipped.clear()
    extract_links(page, HOME, max_links=5, skipped=skipped)
    assert skipped == {SKIP_LINK_LIMIT: 1}  # the cap reached on the fifth: the feed unread
    skipped.clear()
    extract_links(page, HOME, max_links=6, skipped=skipped)
    assert skipped == {"feed": 1}


def test_extract_links_with_queries_allowed() -> None:
    assert "https://www.example.com/a?b=1&c=2" in extract_links(PAGE, HOME, allow_query=True)


def test_extract_links_follows_the_base_element_and_caps() -> None:
    page = '<base href="/docs/"><a href="intro">x</a><a href="setup">y</a><a href="z">z</a>'
    assert extract_links(page, HOME, max_links=2) == [
        "https://www.example.com/docs/intro", "https://www.example.com/docs/setup"]


def test_a_base_elsewhere_makes_relative_links_foreign() -> None:
    page = '<base href="https://cdn.example/"><a href="x">x</a>'
    assert extract_links(page, HOME) == []


@given(st.text(max_size=500))
def test_any_text_gives_distinct_normalised_same_origin_links(html: str) -> None:
    skipped: Counter[str] = Counter()
    links = extract_links(html, HOME, max_links=5, skipped=skipped)
    assert all(count > 0 for count in skipped.values())
    assert len(links) == len(set(links)) <= 5
    for link in links:
        assert normalise(link) == link
        assert link.startswith("https://www.example.com/")


@given(st.lists(st.sampled_from([
    '<a href="', '">', "'", '"', "/x", "/y?z", "<![", "]>", "<!--", "-->", "<base href=",
    "&amp;", "&#0;", "&#x110000;", "<area href=/a>", "<", ">", "/", "../", " ", "\x00",
]), max_size=40))
def test_markup_soup_never_raises(tokens: list[str]) -> None:
    for link in extract_links("".join(tokens), HOME):
        assert link.startswith("https://www.example.com/")

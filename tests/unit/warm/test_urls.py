"""Tests for stoker.warm.urls: normalising, placement on the site origins, warm order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.warm.urls import (
    MAX_URL_CHARS,
    Candidate,
    Collector,
    SiteOrigins,
    join_url,
    normalise,
    order_urls,
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://www.example.com/", "https://www.example.com/"),
        ("HTTPS://WWW.Example.COM", "https://www.example.com/"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("https://example.com:8443/a", "https://example.com:8443/a"),
        ("http://example.com/a#section", "http://example.com/a"),
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/a/..", "http://example.com/"),
        ("http://example.com/a/b/.", "http://example.com/a/b/"),
        ("http://example.com/../../x", "http://example.com/x"),
        ("  http://example.com/a  ", "http://example.com/a"),
        ("http://example.com/a b", "http://example.com/a%20b"),
        ("http://example.com/caf\u00e9", "http://example.com/caf%C3%A9"),
        # existing escapes are kept byte for byte, as the cache key keeps them
        ("http://example.com/a%2fb%7E", "http://example.com/a%2fb%7E"),
        ("http://example.com/p?b=2&a=1&&", "http://example.com/p?a=1&b=2"),
        ("http://example.com/p?", "http://example.com/p"),
        ("http://b\u00fccher.example/", "http://xn--bcher-kva.example/"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/"),
        ("ftp://example.com/a", None),
        ("javascript:alert(1)", None),
        ("mailto:a@example.com", None),
        ("/relative/path", None),
        ("http:///path", None),
        ("http://user:pw@example.com/", None),
        ("http://example.com:99999/", None),
        ("http://example.com:port/", None),
        ("http://exa mple.com/", None),
        ("http://example.com/a\nb", None),
        ("http://example.com/" + "a" * MAX_URL_CHARS, None),
    ],
)
def test_normalise(url: str, expected: str | None) -> None:
    assert normalise(url) == expected


@given(st.text(max_size=300))
def test_normalise_is_idempotent_and_bounded_on_any_text(text: str) -> None:
    url = normalise(text)
    if url is not None:
        assert url.startswith(("http://", "https://"))
        assert len(url) <= MAX_URL_CHARS
        assert normalise(url) == url


@given(st.sampled_from(["http://", "https://", "HTTP://"]),
       st.text(alphabet="abcXYZ019.-_~%:[]@", min_size=1, max_size=20),
       st.text(alphabet="/abc.%?&=#\u00e9 ;:", max_size=40))
def test_normalise_is_idempotent_on_url_like_text(scheme: str, host: str, rest: str) -> None:
    url = normalise(scheme + host + rest)
    if url is not None:
        assert normalise(url) == url


def test_join_url_resolves_and_refuses_what_cannot_be_parsed() -> None:
    assert join_url("http://example.com/a/b", "../c") == "http://example.com/c"
    assert join_url("http://example.com/", " /x ") == "http://example.com/x"
    assert join_url("http://example.com/", "//[oops/x") is None


SITE = "https://www.example.com"


@pytest.mark.parametrize(
    ("aliases", "url", "expected"),
    [
        ((), "https://www.example.com/a", "https://www.example.com/a"),
        ((), "http://www.example.com/a", None),  # another scheme is another origin
        ((), "https://example.com/a", None),
        (("origin.internal:8000",), "http://origin.internal:8000/a?x=1",
         "https://www.example.com/a?x=1"),
        (("origin.internal:8000",), "http://origin.internal:9000/a", None),
        (("origin.internal",), "http://origin.internal:9000/a", "https://www.example.com/a"),
        (("http://10.0.0.5:8000/",), "http://10.0.0.5:8000/a", "https://www.example.com/a"),
        (("cms.example.com",), "https://cms.example.com/a", "https://www.example.com/a"),
        (("[::1]:8000",), "http://[::1]:8000/a", "https://www.example.com/a"),
        (("cms.example.com:443",), "https://cms.example.com/a", "https://www.example.com/a"),
    ],
)
def test_place_keeps_site_urls_and_moves_aliases(aliases: tuple[str, ...], url: str,
                                                 expected: str | None) -> None:
    normalised = normalise(url)
    assert normalised is not None
    assert SiteOrigins([f"{SITE}/"], aliases).place(normalised, SITE) == expected


def test_place_keeps_urls_of_every_site_and_moves_aliases_onto_the_site_discovered() -> None:
    origins = SiteOrigins(["https://www.example.com/", "https://www.example.de/"], ["cms"])
    assert origins.place("https://www.example.de/a", SITE) == "https://www.example.de/a"
    assert origins.place("http://cms/a", "https://www.example.de") == "https://www.example.de/a"


def c(url: str, lastmod: float | None = None, *, home: bool = False) -> Candidate:
    return Candidate(f"{SITE}{url}", lastmod, home)


def test_order_home_first_then_hits_then_lastmod_newest_then_sitemap_order() -> None:
    candidates = [c("/", home=True), c("/old", 100.0), c("/none"), c("/new", 300.0),
                  c("/mid", 200.0), c("/popular", 1.0), c("/later-none"), c("/hot")]
    hits = {f"{SITE}/popular": 5, f"{SITE}/hot": 9, f"{SITE}/": 1}
    urls, dropped = order_urls(candidates, hits, 100)
    assert [u.removeprefix(SITE) for u in urls] == [
        "/", "/hot", "/popular", "/new", "/mid", "/old", "/none", "/later-none"]
    assert dropped == 0


def test_order_dedupes_keeping_first_position_and_newest_lastmod() -> None:
    urls, _ = order_urls([c("/a"), c("/b", 10.0), c("/a", 20.0), c("/b", 5.0)], {}, 10)
    assert urls == [f"{SITE}/a", f"{SITE}/b"]


def test_a_home_page_seen_first_in_a_sitemap_still_leads() -> None:
    other_home = Candidate("https://www.example.de/", None, home=True)
    urls, _ = order_urls([c("/", home=True), c("/a", 9.0), Candidate(other_home.url, 1.0),
                          other_home], {}, 10)
    assert urls == [f"{SITE}/", "https://www.example.de/", f"{SITE}/a"]


def test_popularity_keys_are_normalised() -> None:
    urls, _ = order_urls([c("/a"), c("/b")], {"HTTPS://WWW.EXAMPLE.COM:443/b#x": 3}, 10)
    assert urls == [f"{SITE}/b", f"{SITE}/a"]


def test_cap_keeps_the_best_and_counts_the_rest() -> None:
    candidates = [c("/", home=True)] + [c(f"/p{i}", float(i)) for i in range(100)]
    urls, dropped = order_urls(candidates, {}, 5)
    assert urls == [f"{SITE}/"] + [f"{SITE}/p{i}" for i in (99, 98, 97, 96)]
    assert dropped == 96


def test_collector_memory_is_bounded_by_twice_the_cap() -> None:
    collector = Collector(10, {})
    for i in range(10_000):
        collector.add(c(f"/p{i}", float(i % 37)))
        assert len(collector._kept) < 20
    assert len(collector.result()) == 10


def reference_order(candidates: list[Candidate], hits: dict[str, int],
                    cap: int) -> list[str]:
    first: dict[str, tuple[bool, float, int]] = {}
    for seq, cand in enumerate(candidates):
        lastmod = -float("inf") if cand.lastmod is None else cand.lastmod
        home, best, at = first.get(cand.url, (cand.home, lastmod, seq))
        first[cand.url] = (home, max(best, lastmod), at)

    def rank(url: str) -> tuple[int, float, float, int]:
        home, lastmod, seq = first[url]
        return (0, seq, 0.0, 0) if home else (1, -hits.get(url, 0), -lastmod, seq)

    return sorted(first, key=rank)[:cap]


candidate_lists = st.lists(
    st.builds(c, st.sampled_from([f"/p{i}" for i in range(30)]),
              st.none() | st.floats(0, 1e9, allow_nan=False)),
    max_size=80)


@given(candidate_lists, st.dictionaries(st.sampled_from([f"{SITE}/p{i}" for i in range(30)]),
                                        st.integers(0, 5)),
       st.integers(1, 40))
def test_order_is_capped_distinct_and_matches_the_reference(
        candidates: list[Candidate], hits: dict[str, int], cap: int) -> None:
    urls, _ = order_urls([c("/", home=True), *candidates], hits, cap)
    assert len(urls) == len(set(urls)) <= cap
    assert urls[0] == f"{SITE}/"
    if len({cand.url for cand in candidates}) + 1 < 2 * cap:  # never pruned before the end
        assert urls == reference_order([c("/", home=True), *candidates], hits, cap)

"""Which origins a warm run fills, from the origins visitors arrived on; the verdict."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stoker.cache.hits import SeenOrigin
from stoker.http.site_hosts import SiteHosts
from stoker.warm.origins import (
    MAX_ORIGINS,
    MAX_WARMED,
    MIN_VISITS,
    OTHER,
    WINDOW,
    authority_prefix,
    folded,
    origin_of,
    spread,
    tally,
    verdict,
    warm_origins,
)

NOW = 1_700_000_000.0
SITE = ("http://example.com",)
HOSTS = SiteHosts.of(site_urls=SITE, purge_hosts=(), listen="127.0.0.1:8080",
                     aliases=("wp.internal",))


def seen(**visits: int) -> list[SeenOrigin]:
    names = {"https": "https://example.com", "http": "http://example.com", "other": OTHER,
             "www": "https://www.example.com", "alias": "https://wp.internal"}
    return [SeenOrigin(names[name], count, NOW) for name, count in visits.items()]


# -- tally ---------------------------------------------------------------------------


def test_tally_sums_visits_per_known_origin_and_puts_other_hosts_in_one_unnamed_row() -> None:
    counts = {"https://example.com/a": (3, 1), "https://example.com/b?x=1": (0, 2),
              "http://example.com/a": (1, 0), "https://wp.internal:8443/": (1, 0),
              "http://evil.test/a": (5, 5), "https://127.0.0.1:8080/": (2, 0)}
    assert tally(counts, HOSTS.known) == {"https://example.com": 6, "http://example.com": 1,
                                          "https://wp.internal:8443": 1,
                                          "https://127.0.0.1:8080": 2, OTHER: 10}


@given(st.lists(st.integers(min_value=0, max_value=200), min_size=1, max_size=60))
def test_tally_never_names_an_unknown_host_and_keeps_every_visit_or_the_top(
        ports: list[int]) -> None:
    counts = {f"https://wp.internal:{1000 + port}/": (port + 1, 0) for port in ports}
    counts["https://attacker.test/"] = (7, 0)
    found = tally(counts, HOSTS.known)
    assert found[OTHER] == 7
    named = {origin: count for origin, count in found.items() if origin != OTHER}
    assert len(named) <= MAX_ORIGINS
    assert all("attacker" not in origin for origin in named)
    smallest_kept = min(named.values())
    dropped = set(f"https://wp.internal:{1000 + port}" for port in ports) - set(named)
    assert all(counts[origin + "/"][0] <= smallest_kept for origin in dropped)


URLISH = st.one_of(
    st.text(),
    st.builds(lambda scheme, authority, rest: f"{scheme}://{authority}{rest}",
              st.sampled_from(["http", "HTTPS", "ftp", "1x", ""]),
              st.one_of(st.sampled_from(["example.com", "EXAMPLE.com:80", "wp.internal:8443"]),
                        st.text(alphabet="aZ09.:[]@%-_ \t\n\\", max_size=20)),
              st.text(alphabet="/?#a:.", max_size=10)))


def parsed(url: str) -> tuple[str, str] | str:
    try:
        return origin_of(url)
    except ValueError as error:
        return f"error: {error}"


@given(URLISH)
def test_the_authority_prefix_parses_as_the_whole_url(url: str) -> None:
    prefix = authority_prefix(url)
    assert url.startswith(prefix)
    assert parsed(prefix) == parsed(url)


@given(st.lists(st.tuples(URLISH, st.integers(0, 5), st.integers(0, 5)), max_size=30))
def test_tally_counts_as_parsing_every_url_would(rows: list[tuple[str, int, int]]) -> None:
    counts = {url: (hits, misses) for url, hits, misses in rows
              if not isinstance(parsed(url), str)}  # a key is a URL that parses
    expected: dict[str, int] = {}
    for url, (hits, misses) in counts.items():
        scheme, host = origin_of(url)
        name = (f"{scheme}://{host}" if scheme in ("http", "https") and host
                and HOSTS.known(scheme, host) else OTHER)
        expected[name] = expected.get(name, 0) + hits + misses
    assert tally(counts, HOSTS.known) == {name: n for name, n in expected.items()
                                          if n or name != OTHER}


# -- warm_origins --------------------------------------------------------------------


def test_with_no_visitor_seen_the_configured_site_is_warmed() -> None:
    assert warm_origins(SITE, [], NOW) == SITE


def test_visitors_on_https_behind_a_terminator_get_https_warmed_besides_site_url() -> None:
    assert warm_origins(SITE, seen(https=90, http=10), NOW) == (
        "http://example.com", "https://example.com")


def test_a_configured_site_url_is_normalised_as_keys_hold_it() -> None:
    assert warm_origins(("HTTPS://Example.com:443/",), seen(https=5), NOW) == (
        "https://example.com",)


def test_origins_below_the_share_older_than_the_window_or_unnamed_are_not_warmed() -> None:
    rows = [SeenOrigin("https://example.com", 1000, NOW),
            SeenOrigin("https://www.example.com", 10, NOW),  # 1 %: a stray link
            SeenOrigin("https://old.example.com", 5000, NOW - WINDOW - 1),
            SeenOrigin(OTHER, 9000, NOW)]
    assert warm_origins(SITE, rows, NOW) == ("http://example.com", "https://example.com")


def test_at_most_max_warmed_origins_most_visited_first() -> None:
    rows = [SeenOrigin(f"https://h{n}.example.com", 100 + n, NOW) for n in range(8)]
    assert warm_origins(SITE, rows, NOW) == (
        "http://example.com", *(f"https://h{n}.example.com" for n in (7, 6, 5)))
    assert len(warm_origins(SITE, rows, NOW)) == MAX_WARMED


# -- spread --------------------------------------------------------------------------


def test_spread_puts_each_page_on_every_learned_origin_page_by_page() -> None:
    urls = ["http://example.com/", "http://example.com/a?b=1"]
    assert spread(urls, SITE, ("http://example.com", "https://example.com")) == [
        "http://example.com/", "https://example.com/",
        "http://example.com/a?b=1", "https://example.com/a?b=1"]


def test_spread_with_only_configured_origins_changes_nothing() -> None:
    urls = ["http://example.com/", "http://example.com/a"]
    assert spread(urls, SITE, SITE) == urls


def test_with_several_sites_a_learned_origin_mirrors_the_site_on_its_host_only() -> None:
    sites = ("http://a.test", "http://b.test")
    urls = ["http://a.test/x", "http://b.test/y"]
    assert spread(urls, sites, (*sites, "https://b.test", "https://c.test")) == [
        "http://a.test/x", "http://b.test/y", "https://b.test/y"]


def test_with_one_site_a_learned_host_mirrors_it() -> None:
    assert spread(["http://example.com/p"], SITE, ("https://www.example.com",)) == [
        "http://example.com/p", "https://www.example.com/p"]


# -- verdict -------------------------------------------------------------------------


def test_no_verdict_when_warmed_and_visited_origins_agree_or_too_few_visits() -> None:
    assert verdict(SITE, seen(http=100), NOW) == []
    assert verdict(SITE, seen(https=MIN_VISITS - 1), NOW) == []


def test_visitors_on_https_while_site_url_says_http() -> None:
    found = verdict(SITE, seen(https=95, other=2), NOW)
    assert [finding.key for finding in found] == ["learned https://example.com",
                                                  "unread http://example.com"]
    assert found[0].text == (
        "visitors arrive on https://example.com (95 of 97 visits); site_url names "
        "http://example.com: warm runs fill both; set site_url = [\"https://example.com\"] "
        "to say so")
    assert found[1].text == ("warm runs fill http://example.com, which no visitor read in "
                             "the last 7 days")


def test_both_schemes_in_use_suggests_listing_both() -> None:
    (finding,) = verdict(SITE, seen(https=60, http=40), NOW)
    assert finding.text.endswith(
        'set site_url = ["https://example.com", "http://example.com"] to say so')


def test_visits_on_hosts_not_the_sites_are_said_without_naming_them() -> None:
    (finding,) = verdict(SITE, seen(http=50, other=50), NOW)
    assert finding.key == "other"
    assert finding.text.startswith("50 of 100 visits arrive on hosts that are not the site's")


def test_the_keys_stay_while_only_the_figures_change() -> None:
    first = verdict(SITE, seen(https=95, other=2), NOW)
    later = verdict(SITE, seen(https=950, other=3), NOW)
    assert [f.key for f in first] == [f.key for f in later]
    assert first != later


def test_a_learned_origins_visits_order_the_sites_pages() -> None:
    popular = {"https://example.com/a": 50, "http://example.com/a": 1,
               "https://example.com/b": 7, "https://elsewhere.test/c": 9}
    assert folded(popular, SITE, ("http://example.com", "https://example.com")) == {
        **popular, "http://example.com/a": 51, "http://example.com/b": 7}
    assert folded(popular, SITE, SITE) == popular

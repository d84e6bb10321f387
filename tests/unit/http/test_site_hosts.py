"""The site's own hosts and its aliases (stoker.http.site_hosts)."""

from __future__ import annotations

import pytest

from stoker.http.site_hosts import Aliases, SiteHosts, listener_hosts


@pytest.mark.parametrize(("alias", "scheme", "netloc", "matches"), [
    ("cms.internal", "http", "cms.internal:8000", True),  # no port: any port
    ("cms.internal", "https", "CMS.internal", True),
    ("cms.internal:8000", "http", "cms.internal:8000", True),
    ("cms.internal:8000", "http", "cms.internal:9000", False),
    ("cms.internal:80", "http", "cms.internal", True),  # the default port
    ("http://origin.local", "https", "origin.local:8443", True),
    ("http://origin.local:8080", "http", "origin.local:8080", True),
    ("[::1]:8000", "http", "[::1]:8000", True),
    ("cms.internal", "http", "www.cms.internal", False),
    ("cms.internal", "http", "cms.internal:notaport", False),
    ("cms.internal", "http", "][::", False),  # brackets holding no IP address (hypothesis)
    ("[::1]", "http", "[not-an-ip]", False),
])
def test_alias_matching(alias: str, scheme: str, netloc: str, matches: bool) -> None:
    assert Aliases([alias]).match(scheme, netloc) is matches


@pytest.mark.parametrize(("listen", "hosts"), [
    ("127.0.0.1:8080", ("127.0.0.1:8080", "localhost:8080")),
    ("0.0.0.0:8080", ("127.0.0.1:8080", "localhost:8080")),
    ("[::]:8080", ("[::1]:8080", "localhost:8080")),
    ("10.0.0.5:80", ("10.0.0.5",)),
    ("Proxy.LAN:3128", ("proxy.lan:3128",)),
])
def test_listener_hosts(listen: str, hosts: tuple[str, ...]) -> None:
    assert listener_hosts(listen) == hosts


def test_own_hosts_come_from_site_url_purge_hosts_and_the_listener() -> None:
    sites = SiteHosts.of(site_urls=["https://WWW.example.com:443", "http://example.com:8080"],
                         purge_hosts=["shop.example", "www.example.com"],
                         listen="127.0.0.1:8080", aliases=["cms.internal"])
    assert sites.own == ("www.example.com", "example.com:8080", "shop.example",
                         "127.0.0.1:8080", "localhost:8080")
    assert sites.known("http", "cms.internal:8000") and sites.known("http", "shop.example")
    assert not sites.known("http", "origin.internal")


def test_an_alias_covers_every_own_host_in_both_schemes() -> None:
    sites = SiteHosts(("a.example", "b.example"), Aliases(["cms.internal"]))
    assert sites.covered("http", "cms.internal:8000") == (
        ("http", "a.example"), ("https", "a.example"), ("http", "b.example"),
        ("https", "b.example"))
    assert sites.covered("https", "a.example") == (("https", "a.example"),)


def test_a_path_covers_the_named_host_or_the_whole_site() -> None:
    sites = SiteHosts(("a.example",), Aliases(["cms.internal"]))
    assert sites.covered_by_path(None) == sites.covered_by_path("cms.internal:8000") == (
        ("http", "a.example"), ("https", "a.example"))
    assert sites.covered_by_path("b.example") == (("http", "b.example"), ("https", "b.example"))

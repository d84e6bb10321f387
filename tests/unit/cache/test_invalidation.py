"""parse_purge_request: what is accepted, how it is normalised, and every refusal."""

from __future__ import annotations

from typing import Any

import pytest

from stoker.cache.invalidation import PurgeRequestError, PurgeScope, parse_purge_request
from stoker.http.site_hosts import Aliases, SiteHosts

HOST = "www.example.com"
SITES = SiteHosts((HOST,), Aliases(["cms.internal:8000", "http://origin.local"]))


def parse(data: Any, allowed: tuple[str, ...] = (), sites: SiteHosts = SITES) -> PurgeScope:
    return parse_purge_request(data, sites=sites, allowed_hosts=allowed)


def test_absolute_urls_are_normalised_and_deduplicated() -> None:
    scope = parse({"urls": ["HTTPS://WWW.Example.com:443/a?b=1#frag",
                            "https://www.example.com/a?b=1"]})
    assert scope.urls == ("https://www.example.com/a?b=1",)
    assert (scope.everything, scope.soft, scope.kind) == (False, False, "urls")


def test_paths_expand_for_both_schemes_against_the_host() -> None:
    assert parse({"urls": ["/x?y=1"]}).urls == (f"http://{HOST}/x?y=1", f"https://{HOST}/x?y=1")
    assert parse({"prefixes": ["/blog/"], "host": "Shop.Example:8080"}).prefixes == (
        "http://shop.example:8080/blog/", "https://shop.example:8080/blog/")


def test_tags_are_exact_strings() -> None:
    scope = parse({"tags": ["post-1", "post-1", "Post-1"], "soft": True})
    assert scope.tags == ("post-1", "Post-1")
    assert scope.soft and scope.kind == "tags"


def test_all_alone() -> None:
    scope = parse({"all": True, "soft": False})
    assert scope.everything and scope.kind == "all"
    assert scope.as_json() == {"urls": [], "prefixes": [], "tags": [], "all": True,
                               "soft": False}


def test_a_path_covers_every_own_host_and_never_the_origin() -> None:
    sites = SiteHosts.of(site_urls=["https://www.example.com"], purge_hosts=["shop.example"],
                         listen="0.0.0.0:8080", aliases=[])
    hosts = {url.split("/")[2] for url in parse({"urls": ["/a"]}, sites=sites).urls}
    assert hosts == {"www.example.com", "shop.example", "127.0.0.1:8080", "localhost:8080"}


@pytest.mark.parametrize("named", ["http://cms.internal:8000/post/", "https://origin.local/post/",
                                   "http://ORIGIN.local:8080/post/"])
def test_an_alias_stands_for_the_site(named: str) -> None:
    scope = parse({"urls": [named]})
    assert scope.urls == (f"http://{HOST}/post/", f"https://{HOST}/post/")
    assert scope.unknown_hosts == ()


def test_an_alias_in_the_host_field_stands_for_the_site() -> None:
    assert parse({"prefixes": ["/blog/"], "host": "cms.internal:8000"}).prefixes == (
        f"http://{HOST}/blog/", f"https://{HOST}/blog/")


def test_an_alias_port_must_match() -> None:
    scope = parse({"urls": ["http://cms.internal:9000/post/"]})
    assert scope.urls == ("http://cms.internal:9000/post/",)
    assert scope.unknown_hosts == ("cms.internal:9000",)


def test_hosts_that_are_not_the_sites_are_reported() -> None:
    scope = parse({"urls": ["https://elsewhere.example/a", "/b", "https://elsewhere.example/c"],
                   "prefixes": ["https://www.example.com/x/"]})
    assert scope.unknown_hosts == ("elsewhere.example",)
    assert "https://elsewhere.example/a" in scope.urls  # purged as named all the same
    assert parse({"urls": ["/b"], "host": "other.example"}).unknown_hosts == ("other.example",)


def test_an_alias_passes_purge_hosts() -> None:
    scope = parse({"urls": ["http://cms.internal:8000/a"]}, allowed=(HOST,))
    assert scope.urls == (f"http://{HOST}/a", f"https://{HOST}/a")


def test_allowed_hosts_restrict_absolute_urls() -> None:
    allowed = ("www.example.com", "cdn.example.com:8443")
    assert parse({"urls": ["http://www.example.com:80/a"]}, allowed).urls == (
        "http://www.example.com/a",)
    assert parse({"urls": ["https://cdn.example.com:8443/a"]}, allowed).urls
    with pytest.raises(PurgeRequestError) as error:
        parse({"urls": ["/ok", "https://evil.example/a"]}, allowed)
    assert error.value.field == "urls[1]"
    assert "evil.example" in str(error.value)


@pytest.mark.parametrize(("data", "field"), [
    ([], "body"),
    ("tags", "body"),
    ({"tags": ["a"], "purge": True}, "purge"),
    ({}, "urls"),
    ({"urls": [], "tags": [], "prefixes": [], "all": False}, "urls"),
    ({"tags": ["has space"]}, "tags[0]"),
    ({"tags": ["ok", "a,b"]}, "tags[1]"),
    ({"tags": ["ok", ""]}, "tags[1]"),
    ({"tags": ["tab\there"]}, "tags[0]"),
    ({"tags": "post-1"}, "tags"),
    ({"tags": [1]}, "tags"),
    ({"urls": ["ftp://example.com/a"]}, "urls[0]"),
    ({"urls": ["example.com/a"]}, "urls[0]"),
    ({"urls": ["//example.com/a"]}, "urls[0]"),
    ({"urls": ["/a b"]}, "urls[0]"),
    ({"urls": ["https://user:pw@example.com/"]}, "urls[0]"),
    ({"urls": ["https://exa mple.com/"]}, "urls[0]"),
    ({"prefixes": ["mailto:x"]}, "prefixes[0]"),
    ({"all": "yes"}, "all"),
    ({"tags": ["a"], "soft": 1}, "soft"),
    ({"all": True, "tags": ["a"]}, "all"),
    ({"urls": ["/a"], "host": ""}, "host"),
    ({"urls": ["/a"], "host": "bad host"}, "host"),
    ({"tags": ["t"] * 10_001}, "tags"),
])
def test_refusals_name_the_field(data: Any, field: str) -> None:
    with pytest.raises(PurgeRequestError) as error:
        parse(data)
    assert error.value.field == field
    assert str(error.value).startswith(f"{field}: ")
    assert isinstance(error.value, ValueError)

"""parse_purge_request: what is accepted, how it is normalised, and every refusal."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.site_hosts import Aliases, SiteHosts
from stoker.purge.scope import (
    PurgeRequestError,
    PurgeScope,
    also_urls,
    parse_purge_request,
    purge_is_soft,
    with_also,
)

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


@given(asked=st.sampled_from([True, False, None]), mode=st.sampled_from(["hard", "soft"]))
def test_an_explicit_choice_wins_and_purge_mode_decides_the_rest(asked: bool | None,
                                                                 mode: str) -> None:
    soft = purge_is_soft(asked, mode)
    assert soft is (asked if asked is not None else mode == "soft")


@pytest.mark.parametrize(("data", "soft"), [
    ({"urls": ["/a"]}, True),
    ({"urls": ["/a"], "soft": None}, True),
    ({"urls": ["/a"], "soft": False}, False),
    ({"all": True}, True),
])
def test_a_request_without_soft_follows_purge_mode(data: Any, soft: bool) -> None:
    assert parse_purge_request(data, sites=SITES, purge_mode="soft").soft is soft
    assert parse_purge_request(data, sites=SITES).soft is False  # purge_mode = "hard"


def test_rewarm_also_paths_stand_for_the_sites_hosts_in_both_schemes() -> None:
    sites = SiteHosts((HOST, "shop.example"), Aliases([]))
    assert also_urls(["/", "/blog/", "/"], sites) == (
        f"http://{HOST}/", f"https://{HOST}/", "http://shop.example/", "https://shop.example/",
        f"http://{HOST}/blog/", f"https://{HOST}/blog/", "http://shop.example/blog/",
        "https://shop.example/blog/")


@given(urls=st.lists(st.sampled_from(["http://a/1", "http://a/2", "http://a/"]), unique=True),
       also=st.lists(st.sampled_from(["http://a/", "http://a/blog/"]), unique=True),
       tags=st.lists(st.sampled_from(["t1", "t2"]), unique=True), soft=st.booleans())
def test_with_also_adds_the_paths_to_every_purge_but_everything(
        urls: list[str], also: list[str], tags: list[str], soft: bool) -> None:
    scope = PurgeScope(urls=tuple(urls), tags=tuple(tags), soft=soft)
    widened = with_also(scope, also)
    assert widened.urls[:len(urls)] == scope.urls  # the purge's own first, in order
    assert set(widened.urls) == set(urls) | set(also)
    assert len(set(widened.urls)) == len(widened.urls)
    assert (widened.tags, widened.prefixes, widened.soft) == (scope.tags, (), soft)
    everything = PurgeScope(everything=True, soft=soft)
    assert with_also(everything, also) == everything

"""Cache rules: first match wins, prefix vs glob, cookie patterns."""

from __future__ import annotations

import glob
from urllib.parse import urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.config.rules import (
    has_cookie,
    match_rule,
    parse_rules,
    query_names,
    strip_cookies,
)

RULES = parse_rules([
    {"host": "shop.example", "path": "/cart", "bypass": True},
    {"path": "/static/*.css", "ttl": "1d"},
    {"path": "/blog/", "ttl": 60},
    {},
])


@pytest.mark.parametrize(("host", "path", "index"), [
    ("shop.example", "/cart/items", 0),
    ("other.example", "/cart", 3),
    ("any", "/static/site.css", 1),
    ("any", "/static/site.js", 3),
    ("any", "/blog/post", 2),
    ("SHOP.EXAMPLE", "/cart", 0),
])
def test_first_matching_rule_wins(host: str, path: str, index: int) -> None:
    assert match_rule(RULES, host, path, "") is RULES[index]


def test_no_rules_no_match() -> None:
    assert match_rule((), "h", "/", "") is None


def test_unknown_rule_key_is_named() -> None:
    with pytest.raises(ValueError, match="unknown key 'tll'"):
        parse_rules([{"tll": 5}])


def test_rule_types_are_checked() -> None:
    with pytest.raises(ValueError, match="bypass must be true or false"):
        parse_rules([{"bypass": "yes"}])
    with pytest.raises(ValueError, match="ignore_query must be a list"):
        parse_rules([{"ignore_query": "utm_*"}])


def test_cookie_patterns() -> None:
    header = "sessionid=1; wordpress_logged_in_ab=2; _ga=3"
    assert has_cookie(header, ["wordpress_logged_in_*"])
    assert not has_cookie(header, ["csrftoken"])
    assert not has_cookie(None, ["*"])
    assert strip_cookies(header, ["_ga*", "sessionid"]) == "wordpress_logged_in_ab=2"
    assert strip_cookies("_ga=1", ["_ga"]) is None


@given(st.lists(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), min_size=1, max_size=6))
def test_stripping_everything_leaves_nothing(names: list[str]) -> None:
    header = "; ".join(f"{name}=v" for name in names)
    assert strip_cookies(header, ["*"]) is None
    assert not has_cookie(strip_cookies(header, names[:1]), names[:1])


def test_personal_cookies_are_those_no_list_accounts_for() -> None:
    from stoker.config.rules import Rule, personal_cookies

    rule = Rule(strip_cookies=("_ga*",), ignore_cookies=("consent",),
                vary_ignore_cookies=("csrftoken",))
    cookie = [(b"cookie", b"_ga=1; consent=y; csrftoken=t; comment_author_x=Alice; sid=9")]
    assert personal_cookies(cookie, rule) == ["comment_author_x", "sid"]
    assert personal_cookies(cookie, None) == ["_ga", "consent", "csrftoken",
                                              "comment_author_x", "sid"]
    assert personal_cookies([], rule) == []
    assert personal_cookies(cookie, Rule(cache_with_cookies=True)) == []
    assert personal_cookies([(b"cookie", b"_ga=1; consent=n")], rule) == []


# -- query_has ---------------------------------------------------------------------------

PENDING = parse_rules([{"query_has": ["unapproved", "moderation-hash"], "bypass": True}, {}])


@pytest.mark.parametrize(("query", "matched"), [
    ("unapproved=9&moderation-hash=abc", True),
    ("a=1&unapproved", True),  # a name without "=" counts
    ("moderation-hash=abc", True),
    ("un%61pproved=9", True),  # names are percent-decoded, as the origin reads them
    ("moderation%2Dhash=x", True),
    ("unapproved%5B%5D=9", True),  # PHP reads unapproved[] (and unapproved[x]) as unapproved
    ("unapproved[x]=9", True),
    ("%20unapproved=9", True),  # PHP drops leading spaces of a name
    ("xunapproved=1", False),
    ("unapprovedx=1", False),
    ("q=unapproved", False),  # a value is not a name
    ("unapproved_=1", False),
    ("Unapproved=1", False),  # names are case-sensitive, as PHP's $_GET
    ("", False),
    ("&&=&", False),
])
def test_query_has_matches_a_parameter_by_name(query: str, matched: bool) -> None:
    assert (match_rule(PENDING, "h", "/post/", query) is PENDING[0]) is matched


def test_query_has_adds_to_host_and_path() -> None:
    rules = parse_rules([{"host": "blog.example", "path": "/post/", "query_has": ["p"],
                          "bypass": True}, {}])
    assert match_rule(rules, "blog.example", "/post/1", "p=1") is rules[0]
    assert match_rule(rules, "shop.example", "/post/1", "p=1") is rules[1]
    assert match_rule(rules, "blog.example", "/page/", "p=1") is rules[1]
    assert match_rule(rules, "blog.example", "/post/1", "") is rules[1]


def test_query_has_takes_globs_as_the_other_lists() -> None:
    rules = parse_rules([{"query_has": ["preview*"]}])
    assert match_rule(rules, "h", "/", "preview_id=4") is rules[0]
    assert match_rule(rules, "h", "/", "xpreview=4") is None


@pytest.mark.parametrize(("value", "said"), [
    ("unapproved", "query_has must be a list of strings"),
    (["unapproved", ""], "query_has must not hold an empty name"),
])
def test_query_has_is_checked(value: object, said: str) -> None:
    with pytest.raises(ValueError, match=f"#1: {said}"):
        parse_rules([{"query_has": value}])


query_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
plain_names = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=" ["),
                      min_size=1, max_size=8)


@given(st.lists(st.tuples(plain_names, query_text), max_size=5), plain_names)
def test_a_name_matches_exactly_when_a_parameter_has_it(params: list[tuple[str, str]],
                                                        wanted: str) -> None:
    query = urlencode(params)
    assert query_names(query) == {name for name, _ in params}
    rules = parse_rules([{"query_has": [glob.escape(wanted)]}])
    assert (match_rule(rules, "h", "/", query) is not None) is (wanted in dict(params))


@given(st.text(max_size=40))
def test_any_query_string_is_read_without_error(query: str) -> None:
    assert all(isinstance(name, str) for name in query_names(query))
    match_rule(PENDING, "h", "/", query)

"""Cache rules: first match wins, prefix vs glob, cookie patterns."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.config.rules import has_cookie, match_rule, parse_rules, strip_cookies

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
    assert match_rule(RULES, host, path) is RULES[index]


def test_no_rules_no_match() -> None:
    assert match_rule((), "h", "/") is None


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

"""The advice: from one reason's figures to the change that makes them cacheable, or why
not caching them is right — every reason, and properties over any figures."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.admin.why_advice import (
    CHANGE,
    FIXED,
    ORIGIN,
    RIGHT,
    Advice,
    Site,
    advise,
    chosen_sections,
)
from stoker.config.platform_cookies import PERSONAL_COOKIES, is_personal
from stoker.config.rules import has_cookie, match_rule, parse_rules
from stoker.config.settings import FIELDS, settings_from

SITE = "https://www.example.com"
PRIVATE = ("set-cookie", "private", "authorization", "request")


def figures(reason: str, count: int = 10, details: dict[str, int] | None = None,
            sections: list[list[Any]] | None = None) -> dict[str, Any]:
    return {"reason": reason, "count": count, "details": details or {}, "urls": [],
            "sections": sections or []}


def only(advice: list[Advice]) -> Advice:
    [one] = advice
    return one


# -- no freshness ----------------------------------------------------------------------


def test_a_section_with_most_of_the_responses_gets_a_rule_for_its_path() -> None:
    advice = only(advise(figures("no-freshness", 130, sections=[
        [f"{SITE}/blog/", 128, 0, 40], [f"{SITE}/about", 2, 0, 1]]), Site()))
    assert advice == Advice(
        CHANGE, '40 pages (128 responses) under /blog/ had no freshness: add '
                '`[[rule]] path = "/blog/" ttl = "5m"`',
        '[[rule]]\npath = "/blog/"\nttl = "5m"\n', {"path": "/blog/", "host": "www.example.com"})


def test_up_to_three_sections_get_a_rule_each() -> None:
    rows = [[f"{SITE}/{name}/", 25, 0, 5] for name in ("a", "b", "c", "d")]
    advice = advise(figures("no-freshness", 100, sections=rows), Site())
    assert [item.about["path"] for item in advice] == ["/a/", "/b/", "/c/"]


def test_a_top_level_page_gets_a_prefix_rule_of_its_own() -> None:
    advice = only(advise(figures("no-freshness", 5, sections=[
        [f"{SITE}/about", 5, 0, 1]]), Site()))
    assert advice.text.startswith("1 page (5 responses) for /about had no freshness")
    assert advice.config == '[[rule]]\npath = "/about"\nttl = "5m"\n'


@pytest.mark.parametrize("rows", [
    [[f"{SITE}/", 60, 0, 1], [f"{SITE}/blog/", 40, 0, 9]],  # the home page: every page
    [[f"{SITE}/{n}/", 5, 0, 1] for n in range(11)] + [[f"{SITE}/x/", 45, 0, 5]],  # thin
    [[f"{SITE}/{n}/", 9, 0, 1] for n in range(10)],  # none reaches 10 %
    [],
])
def test_spread_or_the_home_page_gets_one_catch_all_rule(rows: list[list[Any]]) -> None:
    advice = only(advise(figures("no-freshness", 100, sections=rows), Site()))
    assert advice.config == '[[rule]]\nttl = "5m"\n'
    assert advice.text == ('100 responses across the site had no freshness: add '
                           '`[[rule]] ttl = "5m"` (no path: every page), or a `preset` for '
                           'your platform')


def test_with_rules_a_catch_all_goes_after_them() -> None:
    rules = parse_rules([{"path": "/admin/", "bypass": True}])
    advice = only(advise(figures("no-freshness", 10, sections=[[f"{SITE}/", 10, 0, 1]]),
                         Site(rules)))
    assert "after your rules" in advice.text and advice.config == '[[rule]]\nttl = "5m"\n'


def test_a_catch_all_rule_without_ttl_gets_one() -> None:
    rules = parse_rules([{"strip_cookies": ["_ga*"]}])
    advice = only(advise(figures("no-freshness", 10, sections=[[f"{SITE}/", 10, 0, 1]]),
                         Site(rules)))
    assert advice.config == 'ttl = "5m"\n' and "your `[[rule]]` with no path" in advice.text


def test_a_rule_that_matches_the_section_gets_the_ttl_instead_of_a_new_rule() -> None:
    rules = parse_rules([{"path": "/blog", "strip_cookies": ["_ga*"]}])
    advice = only(advise(figures("no-freshness", 10, sections=[[f"{SITE}/blog/", 10, 0, 3]]),
                         Site(rules)))
    assert advice.config == 'ttl = "5m"\n'
    assert 'to the `[[rule]]` that matches them (path = "/blog")' in advice.text


def test_a_rule_that_sets_a_ttl_already_says_the_figures_are_older() -> None:
    rules = parse_rules([{"path": "/blog/", "ttl": "1m"}])
    advice = only(advise(figures("no-freshness", 10, sections=[[f"{SITE}/blog/", 10, 0, 3]]),
                         Site(rules)))
    assert advice.config is None and "these figures are older" in advice.text


def test_several_hosts_name_the_host_in_the_rule() -> None:
    rows = [[f"{SITE}/blog/", 60, 0, 6], ["https://shop.example.com/p/", 40, 0, 4]]
    advice = advise(figures("no-freshness", 100, sections=rows), Site())
    assert advice[0].config == ('[[rule]]\nhost = "www.example.com"\npath = "/blog/"\n'
                                'ttl = "5m"\n')
    assert "under www.example.com/blog/" in advice[0].text


# -- cookies ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "kind", "config", "said"), [
    ("_ga", CHANGE, '[[rule]]\nstrip_cookies = ["_ga"]\n', "read by analytics scripts only"),
    ("_hjSession", CHANGE, '[[rule]]\nstrip_cookies = ["_hjSession"]\n', "add it to "
                                                                         "`strip_cookies`"),
    ("cookie_consent", CHANGE, '[[rule]]\nignore_cookies = ["cookie_consent"]\n',
     "add it to `ignore_cookies`"),
    ("PHPSESSID", RIGHT, None, "a session cookie: right not to share"),
    ("sessionid", RIGHT, None, "a session cookie"),
    ("theme", CHANGE, None, "if it never changes a page"),
])
def test_each_cookie_gets_advice_by_what_it_is(name: str, kind: str, config: str | None,
                                               said: str) -> None:
    advice = only(advise(figures("cookie", 62, {name: 62}), Site(requests=100)))
    assert (advice.kind, advice.config) == (kind, config)
    assert advice.text.startswith(f"62% of requests (62) carried cookie `{name}`")
    assert said in advice.text
    assert advice.about == {"cookie": name, "requests": 62, "share": 0.62}


def test_a_cookie_goes_in_the_list_of_the_rule_that_matches_its_pages() -> None:
    rules = parse_rules([{"path": "/admin/", "bypass": True},
                         {"path": "/news/", "ttl": "10m", "strip_cookies": ["_hj*"]}])
    advice = only(advise(figures("cookie", 5, {"_ga": 5}, [[f"{SITE}/news/", 5, 0, 2]]),
                         Site(rules, requests=10)))
    assert advice.config == 'strip_cookies = ["_hj*", "_ga"]\n'
    assert advice.text.endswith('add it to `strip_cookies` in the `[[rule]]` that matches '
                                'these pages (path = "/news/")')
    elsewhere = only(advise(figures("cookie", 5, {"_ga": 5}, [[f"{SITE}/shop/", 5, 0, 2]]),
                            Site(rules, requests=10)))
    assert elsewhere.config == '[[rule]]\nstrip_cookies = ["_ga"]\n'


# Cookies a platform tells one visitor from another by, as a naive config (no preset)
# sees them: the advice once said "add it to `strip_cookies` … or `ignore_cookies`" for
# each, and following it served a commenter's name and e-mail to everyone.
PLATFORM_PERSONAL = [
    ("wordpress_logged_in_5f2c", "wordpress"), ("wordpress_sec_5f2c", "wordpress"),
    ("comment_author_5f2c", "wordpress"), ("comment_author_email_5f2c", "wordpress"),
    ("comment_author_url_5f2c", "wordpress"), ("wp-postpass_5f2c", "wordpress"),
    ("woocommerce_items_in_cart", "woocommerce"), ("woocommerce_cart_hash", "woocommerce"),
    ("wp_woocommerce_session_5f2c", "woocommerce"), ("django_language", "django"),
    ("messages", "django"), ("Drupal.visitor.name", "drupal"),
    ("remember_user_token", "rails"), ("remember_web_59ba36", "laravel"),
]


@pytest.mark.parametrize(("name", "preset"), PLATFORM_PERSONAL)
def test_a_platforms_personal_cookie_gets_its_preset_never_a_list_that_shares(
        name: str, preset: str) -> None:
    advice = only(advise(figures("cookie", 30, {name: 30}), Site(requests=100)))
    assert "strip_cookies" not in advice.text and "ignore_cookies" not in advice.text
    assert "this looks like" in advice.text and f"personal cookie `{name}`" in advice.text
    assert (advice.kind, advice.config) == (CHANGE, f'preset = "{preset}"\n')
    assert advice.about["preset"] == preset
    applied = settings_from({"origin": "http://127.0.0.1:1",
                             **tomllib.loads(advice.config)}).rules
    assert all(has_cookie(f"{name}=1", rule.bypass_cookies) for rule in applied
               if not rule.bypass)  # following the advice sends it to the origin


@pytest.mark.parametrize(("name", "preset", "key"), [
    ("csrftoken", "django", "vary_ignore_cookies"), ("XSRF-TOKEN", "laravel",
                                                     "vary_ignore_cookies"),
    ("wp-settings-1", "wordpress", "ignore_cookies"),
    ("wordpress_test_cookie", "wordpress", "ignore_cookies"),
])
def test_a_platforms_harmless_cookie_gets_its_preset_which_keeps_it_on_requests(
        name: str, preset: str, key: str) -> None:
    advice = only(advise(figures("cookie", 30, {name: 30}), Site(requests=100)))
    assert (advice.kind, advice.config) == (CHANGE, f'preset = "{preset}"\n')
    assert f"keeps it on requests and lists it under `{key}`" in advice.text
    assert "strip_cookies" not in advice.text  # a stripped csrftoken breaks every form


def test_cookies_come_most_frequent_first() -> None:
    advice = advise(figures("cookie", 9, {"b": 2, "_ga": 9, "a": 2}), Site(requests=10))
    assert [item.about["cookie"] for item in advice] == ["_ga", "a", "b"]


def test_without_a_request_count_a_cookie_is_counted_not_shared() -> None:
    advice = only(advise(figures("cookie", 1, {"_ga": 1}), Site()))
    assert advice.text.startswith("1 request carried cookie `_ga`")


# -- the others ------------------------------------------------------------------------


def test_statuses_an_error_is_right_a_redirect_is_the_origins() -> None:
    advice = advise(figures("status", 7, {"302": 4, "500": 3}), Site())
    assert [(item.kind, item.about) for item in advice] == [
        (ORIGIN, {"status": 302}), (RIGHT, {"status": 500})]
    assert advice[0].text.startswith("4 responses with status 302 had no explicit lifetime")


def test_too_large_names_the_setting_in_force() -> None:
    advice = only(advise(figures("too-large", 2), Site(size_setting="l2_max_object_bytes",
                                                        size_limit=8 << 20)))
    assert advice.config == 'l2_max_object_bytes = "32MiB"\n'
    assert advice.text.startswith("2 responses larger than `l2_max_object_bytes` (8MiB)")


def test_set_cookie_names_the_cookies_and_never_stores_them() -> None:
    advice = only(advise(figures("set-cookie", 3, {"sid": 2, "csrf": 1}), Site()))
    assert advice.kind == RIGHT and advice.config is None
    assert "(setting `sid`, `csrf`)" in advice.text


@pytest.mark.parametrize(("detail", "said"), [
    ("bypass = true", "matched a `[[rule]]` with `bypass = true`"),
    ("bypass_cookies", "carried a cookie in `bypass_cookies`")])
def test_a_bypass_says_which_setting_made_it(detail: str, said: str) -> None:
    advice = only(advise(figures("bypass", 4, {detail: 4}), Site()))
    assert advice.kind == RIGHT and advice.text.startswith(f"4 requests {said}")


@pytest.mark.parametrize(("vary", "kind", "said"), [
    ("cookie", CHANGE, "`Vary: Cookie` (each is stored once asked for): cookies that never "
                       "change a page go in `vary_ignore_cookies`"),
    ("user-agent", ORIGIN, "`Vary: User-Agent` (each is stored once asked for): that is a "
                           "copy per browser version"),
    ("accept-language", RIGHT, "`Vary: Accept-Language` (each is stored once asked for): "
                               "right where pages differ by it"),
])
def test_a_vary_miss_is_advised_by_the_field_varied_on(vary: str, kind: str,
                                                      said: str) -> None:
    advice = only(advise(figures("vary-miss", 3, {vary: 3}), Site()))
    assert advice.kind == kind and advice.config is None
    assert advice.text.startswith(f"3 requests found only copies for other values of {said}")


@pytest.mark.parametrize("reason", sorted(FIXED))
def test_every_fixed_reason_has_its_sentence(reason: str) -> None:
    advice = only(advise(figures(reason, 2), Site()))
    kind, text = FIXED[reason]
    assert advice.kind == kind and advice.text.endswith(text) and advice.config is None


def test_an_unknown_reason_gets_general_advice() -> None:
    advice = only(advise(figures("something-new", 1), Site()))
    assert advice.kind == ORIGIN and "`something-new`" in advice.text


# -- properties -------------------------------------------------------------------------

REASONS = ["no-freshness", "cookie", "status", "too-large", "set-cookie", "bypass", "vary-miss",
           *FIXED, "unheard-of"]
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-0123456789", min_size=1, max_size=12)
paths = st.lists(st.text(alphabet="abcxyz-", min_size=1, max_size=6), max_size=2).map(
    lambda parts: "/" + "/".join(parts) + ("/" if len(parts) > 1 else ""))
section_rows = st.lists(st.tuples(st.sampled_from([SITE, "http://other.test"]), paths,
                                  st.integers(min_value=0, max_value=1000),
                                  st.integers(min_value=0, max_value=50)).map(
    lambda row: [row[0] + row[1], row[2], 0, row[3]]), max_size=10)
found_figures = st.builds(
    figures, st.sampled_from(REASONS), st.integers(min_value=0, max_value=10_000),
    st.dictionaries(st.one_of(names, st.integers(100, 599).map(str)),
                    st.integers(min_value=1, max_value=1000), max_size=6),
    section_rows)
rule_lists = st.lists(st.fixed_dictionaries({}, optional={
    "path": paths, "ttl": st.just("1m"), "bypass": st.booleans(),
    "strip_cookies": st.just(["_ga*"])}), max_size=3).map(parse_rules)
sites = st.builds(Site, rule_lists, st.integers(min_value=0, max_value=20_000))


@given(found_figures, sites)
def test_any_figures_get_advice_of_a_known_kind(found: dict[str, Any], site: Site) -> None:
    advice = advise(found, site)
    assert advice
    assert all(item.kind in (CHANGE, ORIGIN, RIGHT) and item.text for item in advice)
    assert all(item.config is None or item.kind == CHANGE for item in advice)


@given(found_figures.filter(lambda found: found["reason"] in PRIVATE), sites)
def test_what_is_private_is_never_advised_into_the_cache(found: dict[str, Any],
                                                         site: Site) -> None:
    assert all(item.kind in (RIGHT, ORIGIN) and item.config is None
               for item in advise(found, site))


@given(found_figures, sites)
def test_every_config_is_a_stoker_toml_the_settings_accept(found: dict[str, Any],
                                                          site: Site) -> None:
    for item in advise(found, site):
        if item.config is None:
            continue
        parsed = tomllib.loads(item.config)
        if "rule" in parsed:
            assert parse_rules(parsed["rule"])
        elif set(parsed) <= set(FIELDS):
            settings_from({"origin": "http://127.0.0.1:1", **parsed}, ())
        else:  # the lines to add to the rule that matches
            assert parse_rules([{"path": "/", **parsed}])


@given(st.integers(min_value=1, max_value=10_000), section_rows, rule_lists)
def test_a_rule_advised_for_a_section_matches_it(count: int, rows: list[list[Any]],
                                                rules: tuple[Any, ...]) -> None:
    chosen = chosen_sections(count, rows)
    if chosen is None:
        return
    assert len(chosen) <= 3 and all(section.count * 10 >= count for section in chosen)
    assert sum(section.count for section in chosen) * 2 >= count
    for section in chosen:
        [advice] = advise(figures("no-freshness", count, sections=[
            [f"https://{section.host}{section.path}", section.count, 0, section.pages]]),
            Site(rules))
        if advice.config and advice.config.startswith("[[rule]]"):
            [rule] = parse_rules(tomllib.loads(advice.config)["rule"])
            assert match_rule([rule], section.host, section.path, "") is rule


SHARING_KEYS = ("strip_cookies", "ignore_cookies", "vary_ignore_cookies")


def filled(pattern: str, fills: list[str]) -> str:
    """``pattern`` with each ``*`` replaced by one of ``fills``."""
    first, *rest = pattern.split("*")
    return first + "".join(fill + part for fill, part in zip(fills, rest, strict=False))


personal_names = st.builds(filled, st.sampled_from([pattern for pattern, _ in PERSONAL_COOKIES]),
                           st.lists(names, min_size=3, max_size=3))
cookie_rule_lists = st.lists(st.fixed_dictionaries({}, optional={
    "path": paths, "ttl": st.just("1m"), "bypass": st.booleans(),
    "strip_cookies": st.just(["_ga*"]), "ignore_cookies": st.just(["consent"]),
    "vary_ignore_cookies": st.just(["csrftoken"])}), max_size=3).map(parse_rules)


@given(st.lists(personal_names, min_size=1, max_size=4, unique=True), section_rows,
       cookie_rule_lists, st.integers(min_value=0, max_value=1000))
def test_no_advice_lets_a_personal_cookie_share_pages(cookies: list[str],
                                                      rows: list[list[Any]],
                                                      rules: tuple[Any, ...],
                                                      requests: int) -> None:
    assert all(is_personal(name) for name in cookies)
    found = figures("cookie", len(cookies), dict.fromkeys(cookies, 1), rows)
    for item in advise(found, Site(rules, requests)):
        name = item.about["cookie"]
        assert not any(key in item.text for key in SHARING_KEYS), item.text
        if item.config is None:
            continue
        parsed = tomllib.loads(item.config)
        tables = parsed.get("rule", [parsed])
        assert not any(has_cookie(f"{name}=1", table.get(key, [])) for table in tables
                       for key in SHARING_KEYS), item.config

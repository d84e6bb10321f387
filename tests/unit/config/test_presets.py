"""Platform presets: what each expands to, how it merges with the user's own rules."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatchcase
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from stoker.cli.main import app as cli_app
from stoker.config.presets import NAMES, PRESETS, expand, to_toml
from stoker.config.rules import Rule, match_rule, parse_rules
from stoker.config.settings import SettingsError, load_settings, settings_from

SUFFIX = st.text("abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=24)

# Each platform's own session or login cookie, as the platform names it ({} varies).
SESSION_COOKIE = {
    "wordpress": ["wordpress_logged_in_{}"],
    "woocommerce": ["wp_woocommerce_session_{}", "wordpress_logged_in_{}"],
    "django": ["sessionid"],
    "wagtail": ["sessionid"],
    "drupal": ["SESS{}", "SSESS{}"],
    "rails": ["_{}_session"],
    "laravel": ["laravel_session", "{}_session", "remember_web_{}"],
    "generic": ["PHPSESSID", "sessionid", "JSESSIONID", "{}_session"],
}


def cookie_lists(rule: Rule) -> dict[str, tuple[str, ...]]:
    return {"bypass": rule.bypass_cookies, "strip": rule.strip_cookies,
            "ignore": rule.ignore_cookies, "vary_ignore": rule.vary_ignore_cookies}


def test_every_platform_has_a_session_cookie_sample() -> None:
    assert set(SESSION_COOKIE) == set(NAMES)


@given(name=st.sampled_from(NAMES), choice=st.integers(0, 3), suffix=SUFFIX)
def test_every_preset_bypasses_its_platforms_session_cookie(name: str, choice: int,
                                                            suffix: str) -> None:
    templates = SESSION_COOKIE[name]
    cookie = templates[choice % len(templates)].format(suffix)
    catch_all = parse_rules([], name)[-1]
    assert any(fnmatchcase(cookie, glob) for glob in catch_all.bypass_cookies), (name, cookie)


@pytest.mark.parametrize("name", NAMES)
def test_expansion_is_bypass_rules_then_a_catch_all_with_the_lists(name: str) -> None:
    rules = parse_rules([], name)
    *bypasses, catch_all = rules
    preset = PRESETS[name]
    query = [(None, preset.bypass_query)] if preset.bypass_query else []
    assert [(rule.path, rule.query_has) for rule in bypasses] == [
        *query, *((path, ()) for path in preset.bypass_paths)]
    assert all(rule.bypass and rule.host is None for rule in bypasses)
    assert catch_all.host is None and catch_all.path is None and not catch_all.bypass
    assert catch_all.ttl is not None and catch_all.ttl.ttl and catch_all.ttl.sie
    assert "_ga*" in catch_all.strip_cookies and "cookie_consent" in catch_all.ignore_cookies
    assert "utm_*" in catch_all.ignore_query


@pytest.mark.parametrize("name", NAMES)
def test_no_cookie_pattern_sits_in_two_lists(name: str) -> None:
    catch_all = parse_rules([], name)[-1]
    seen = [glob for globs in cookie_lists(catch_all).values() for glob in globs]
    assert len(seen) == len(set(seen))


@pytest.mark.parametrize("name", NAMES)
def test_printed_expansion_reads_back_as_the_same_rules(name: str) -> None:
    text = to_toml(expand([], name))
    assert parse_rules(tomllib.loads(text)["rule"]) == parse_rules([], name)


def test_user_rule_gets_the_preset_lists_and_keeps_its_own_lifetime() -> None:
    rules = parse_rules([{"path": "/wp/", "ttl": "10m", "strip_cookies": ["tracker"]}],
                        "wordpress")
    wp = match_rule(rules, "blog.example", "/wp/10", "")
    assert wp is not None and wp.path == "/wp/"
    assert "comment_author_*" in wp.bypass_cookies and "wp-postpass_*" in wp.bypass_cookies
    assert wp.strip_cookies[0] == "tracker" and "_ga*" in wp.strip_cookies
    assert wp.ttl is not None and (wp.ttl.ttl, wp.ttl.swr, wp.ttl.sie) == (600, 60, 86400)


def test_bypass_paths_stay_first_before_a_user_catch_all() -> None:
    rules = parse_rules([{"ttl": "1h"}], "wordpress")
    admin = match_rule(rules, "h", "/wp-admin/post.php", "")
    page = match_rule(rules, "h", "/hello-world/", "")
    assert admin is not None and admin.bypass
    assert page is not None and page.ttl is not None and page.ttl.ttl == 3600
    assert rules[-1] is page  # the user's catch-all replaces the preset's
    assert "wordpress_logged_in_*" in page.bypass_cookies


def test_user_rule_for_the_same_path_replaces_the_presets() -> None:
    rules = parse_rules([{"path": "/wp-admin", "ttl": "1m"}], "wordpress")
    assert [rule.path for rule in rules].count("/wp-admin") == 1
    admin = match_rule(rules, "h", "/wp-admin/", "")
    assert admin is not None and not admin.bypass


def test_user_rule_inside_a_bypassed_path_comes_first() -> None:
    ajax = {"path": "/wp-admin/admin-ajax.php", "ttl": "1m"}
    rules = parse_rules([ajax, {"path": "/blog/"}, {"ttl": "1h"}], "wordpress")
    hit = match_rule(rules, "h", "/wp-admin/admin-ajax.php", "")
    other = match_rule(rules, "h", "/wp-admin/edit.php", "")
    assert hit is not None and not hit.bypass and hit.ttl is not None and hit.ttl.ttl == 60
    assert other is not None and other.bypass


@pytest.mark.parametrize("broader", [{"ttl": "1h"}, {"path": "/wp"}, {"path": "*.php"}])
def test_a_user_rule_after_a_broader_one_cannot_open_a_bypassed_path(
        broader: dict[str, str]) -> None:
    rules = parse_rules([broader, {"path": "/wp-admin/", "ttl": "1m"}], "wordpress")
    admin = match_rule(rules, "h", "/wp-admin/edit.php", "")
    assert admin is not None and admin.bypass


def test_same_path_for_one_host_keeps_the_preset_rule_for_the_others() -> None:
    rules = parse_rules([{"host": "dev.example", "path": "/wp-login.php", "ttl": "1m"}],
                        "wordpress")
    dev = match_rule(rules, "dev.example", "/wp-login.php", "")
    live = match_rule(rules, "www.example", "/wp-login.php", "")
    assert dev is not None and not dev.bypass
    assert live is not None and live.bypass


def test_a_cookie_the_user_lists_stays_where_the_user_put_it() -> None:
    rules = parse_rules([{"ignore_cookies": ["comment_author_*"], "bypass_cookies": ["_ga*"]}],
                        "wordpress")
    page = rules[-1]
    assert "comment_author_*" not in page.bypass_cookies
    assert "_ga*" not in page.strip_cookies and page.bypass_cookies[0] == "_ga*"


def test_user_bypass_rules_are_left_alone() -> None:
    feed = {"path": "/feed/", "bypass": True}
    assert match_rule(parse_rules([feed], "wordpress"), "h", "/feed/", "") == parse_rules(
        [feed])[0]


def test_per_rule_preset_merges_that_preset_only() -> None:
    rules = parse_rules([{"path": "/shop/", "preset": "woocommerce"}, {"path": "/api/"}],
                        "django")
    shop = match_rule(rules, "h", "/shop/basket", "")
    api = match_rule(rules, "h", "/api/x", "")
    assert shop is not None and "woocommerce_*" in shop.bypass_cookies
    assert shop.vary_ignore_cookies == ()  # django's csrftoken is not merged into it
    assert api is not None and api.vary_ignore_cookies == ("csrftoken",)
    assert match_rule(rules, "h", "/cart", "") is not shop  # no woocommerce paths


def test_per_rule_preset_without_a_top_level_one() -> None:
    (rule,) = parse_rules([{"path": "/", "preset": "drupal", "ttl": "2m"}])
    assert "Drupal.visitor.*" in rule.bypass_cookies
    assert rule.ttl is not None and rule.ttl.ttl == 120 and rule.ttl.sie == 86400


def test_unknown_per_rule_preset_names_the_rule_and_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"\[\[rule\]\] #2: preset: unknown preset 'joomla' "
                                         r"\(known: wordpress, woocommerce, django"):
        parse_rules([{}, {"preset": "joomla"}])


def test_a_per_rule_preset_leaves_bad_lists_for_the_parser_to_name() -> None:
    with pytest.raises(ValueError, match=r"#1: strip_cookies must be a list of strings"):
        parse_rules([{"preset": "generic", "strip_cookies": [["_ga"]]}])


def test_errors_number_the_users_rules_not_the_expansion() -> None:
    with pytest.raises(ValueError, match=r"#2: bypass_cookies must be a list"):
        parse_rules([{"ttl": "1m"}, {"bypass_cookies": "sessionid"}], "wordpress")


def test_unknown_top_level_preset_is_a_settings_error(tmp_path: Path) -> None:
    path = tmp_path / "stoker.toml"
    path.write_text('preset = "joomla"\n')
    with pytest.raises(SettingsError, match=r"bad value for 'preset'.*expected one of wordpress"):
        load_settings(config_path=path, env={})


def test_settings_rules_are_the_expansion(tmp_path: Path) -> None:
    path = tmp_path / "stoker.toml"
    path.write_text('preset = "wordpress"\n[[rule]]\npath = "/wp/"\nttl = "10m"\n')
    settings = load_settings(config_path=path, env={})
    assert settings.preset == "wordpress"
    assert settings.rules == parse_rules([{"path": "/wp/", "ttl": "10m"}], "wordpress")


def test_preset_from_the_environment_expands_the_files_rules(tmp_path: Path) -> None:
    path = tmp_path / "stoker.toml"
    path.write_text('[[rule]]\npath = "/wp/"\nttl = "10m"\n')
    settings = load_settings(config_path=path, env={"STOKER_PRESET": "WordPress"})
    assert settings.rules == parse_rules([{"path": "/wp/", "ttl": "10m"}], "wordpress")


def test_settings_from_keyword_arguments_expands_a_preset() -> None:
    assert settings_from({"preset": "django"}).rules == parse_rules([], "django")
    with pytest.raises(SettingsError, match="cannot be applied to Rule objects: give the "
                                            "rules as dicts"):
        settings_from({"preset": "django"}, parse_rules([{"ttl": 5}]))
    assert settings_from({"preset": "django"}, [{"ttl": 5}]).rules == parse_rules(
        [{"ttl": 5}], "django")


def test_cli_prints_the_expansion_as_toml() -> None:
    result = CliRunner().invoke(cli_app, ["settings", "--preset", "wagtail"])
    assert result.exit_code == 0, result.output
    assert parse_rules(tomllib.loads(result.stdout)["rule"]) == parse_rules([], "wagtail")


def test_cli_names_the_known_presets_for_an_unknown_one() -> None:
    result = CliRunner().invoke(cli_app, ["settings", "--preset", "joomla"])
    assert result.exit_code == 2
    assert "unknown preset 'joomla'" in result.output and "wordpress" in result.output


# -- personal cookies and pages --------------------------------------------------------

PERSONAL = {
    "wordpress": ["wordpress_logged_in_{}", "wordpress_sec_{}", "comment_author_{}",
                  "comment_author_email_{}", "comment_author_url_{}", "wp-postpass_{}"],
    "woocommerce": ["woocommerce_items_in_cart", "woocommerce_cart_hash",
                    "woocommerce_recently_viewed", "wp_woocommerce_session_{}",
                    "wordpress_logged_in_{}", "comment_author_email_{}"],
    "django": ["sessionid", "django_language", "messages"],
    "wagtail": ["sessionid", "django_language", "messages"],
}


@given(name=st.sampled_from(sorted(PERSONAL)), choice=st.integers(0, 5), suffix=SUFFIX)
def test_a_platforms_personal_cookies_bypass_and_sit_in_no_sharing_list(
        name: str, choice: int, suffix: str) -> None:
    templates = PERSONAL[name]
    cookie = templates[choice % len(templates)].format(suffix)
    catch_all = parse_rules([{"path": "/blog/"}], name)[-1]
    lists = cookie_lists(catch_all)
    assert any(fnmatchcase(cookie, glob) for glob in lists.pop("bypass")), (name, cookie)
    assert not any(fnmatchcase(cookie, glob) for globs in lists.values() for glob in globs)


@pytest.mark.parametrize("name", ["wordpress", "woocommerce"])
@pytest.mark.parametrize(("query", "bypassed"), [
    ("unapproved=9&moderation-hash=f00d", True),  # a commenter's held comment
    ("moderation-hash=f00d", True),
    ("p=12&preview=true", True),  # a draft
    ("preview_id=12&preview_nonce=ab&preview=true", True),
    ("replytocom=3", False),  # the same page for everyone
    ("utm_source=x", False),
    ("", False),
])
def test_wordpress_bypasses_pages_a_query_makes_personal(name: str, query: str,
                                                         bypassed: bool) -> None:
    rules = parse_rules([{"path": "/2024/", "ttl": "1h"}, {"ttl": "30m"}], name)
    for path in ("/2024/hello/", "/about/", "/"):
        rule = match_rule(rules, "h", path, query)
        assert rule is not None and rule.bypass is bypassed, (path, query)


def test_a_user_rule_with_query_has_neither_replaces_a_bypass_nor_the_catch_all() -> None:
    rules = parse_rules([{"path": "/wp-admin", "query_has": ["page"], "ttl": "1m"},
                         {"query_has": ["feed"], "ttl": "1h"}], "wordpress")
    with_page = match_rule(rules, "h", "/wp-admin/admin.php", "page=x")
    without = match_rule(rules, "h", "/wp-admin/edit.php", "")
    assert with_page is not None and not with_page.bypass
    assert without is not None and without.bypass  # the preset's bypass is still there
    catch_all = match_rule(rules, "h", "/blog/", "")
    assert catch_all is not None and catch_all.query_has == () and catch_all.ttl is not None
    assert catch_all.ttl.ttl == 600  # the preset's catch-all, not the user's feed rule

"""Settings precedence and clear errors (defaults < file < environment < flags)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.config.settings import (
    FIELDS,
    SettingsError,
    describe,
    load_settings,
    read_error_page,
)
from stoker.config.settings.checks import ERROR_PAGE_MAX
from stoker.config.settings.loading import closest_setting
from stoker.config.units import format_duration, format_size, parse_duration, parse_size


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "stoker.toml"
    path.write_text(text)
    return path


def test_defaults_without_any_source(tmp_path: Path) -> None:
    settings = load_settings(config_path=None, env={}, cli={})
    assert settings.listen == "127.0.0.1:8080"
    assert settings.admin_listen == "127.0.0.1:8081"
    assert settings.data_dir == Path(".stoker")


def test_precedence_file_then_env_then_flag(tmp_path: Path) -> None:
    path = write(tmp_path, 'origin = "http://file:1"\nlisten = "127.0.0.1:1111"\n'
                           'default_swr = "2m"\n')
    env = {"STOKER_LISTEN": "127.0.0.1:2222", "STOKER_ORIGIN": "http://env:2"}
    settings = load_settings(config_path=path, env=env, cli={"origin": "http://flag:3"})
    assert settings.origin == "http://flag:3"
    assert settings.listen == "127.0.0.1:2222"
    assert settings.default_swr == 120.0


def test_unknown_key_in_file_names_it(tmp_path: Path) -> None:
    path = write(tmp_path, 'orgin = "http://x"\n')
    with pytest.raises(SettingsError, match="unknown setting 'orgin'"):
        load_settings(config_path=path, env={})


def test_unknown_environment_variable_names_it() -> None:
    with pytest.raises(SettingsError, match="STOKER_LISTN"):
        load_settings(env={"STOKER_LISTN": "x"})


@pytest.mark.parametrize(("key", "meant"), [
    ("orgin_host", "origin_host"), ("origin_hots", "origin_host"), ("listne", "listen"),
    ("admin_listn", "admin_listen"), ("rules", "rule"), ("zzqq", None), ("", None),
])
def test_closest_setting_suggests_a_close_known_key(key: str, meant: str | None) -> None:
    assert closest_setting(key, [*FIELDS, "rule"]) == meant


def test_unknown_key_in_file_says_what_it_may_have_meant(tmp_path: Path) -> None:
    path = write(tmp_path, 'orgin_host = "x"\n')
    with pytest.raises(SettingsError, match="did you mean 'origin_host'\\?"):
        load_settings(config_path=path, env={})


def test_unknown_environment_variable_suggests_the_variable() -> None:
    with pytest.raises(SettingsError, match="did you mean 'STOKER_LISTEN'\\?"):
        load_settings(env={"STOKER_LISTN": "x"})


def test_an_unknown_key_nothing_is_close_to_gets_no_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, 'zzqq = 1\n')
    with pytest.raises(SettingsError) as raised:
        load_settings(config_path=path, env={})
    assert "did you mean" not in str(raised.value)


@pytest.mark.parametrize(("key", "value", "words"), [
    ("listen", "8080", "HOST:PORT"),
    ("origin", "ftp://x", "http:// or https://"),
    ("l1_max_bytes", "lots", "size"),
    ("default_sie", "-3", "duration"),
    ("strip_tag_headers", "maybe", "true or false"),
    ("server", "apache", "stoker, granian"),
    ("cache_name", "edge\r\nx-injected: 1", "token"),
    ("cache_name", "two words", "token"),
    ("cache_name", "9lives", "token"),
    ("keep_override_headers", "x-original-url, cookie", "cookie: not a field Stoker drops"),
    ("purge_mode", "softly", "hard, soft"),
    ("rewarm_now_max", "-1", "whole number"),
    ("rewarm_also", "/, blog/", "paths such as"),
    ("rewarm_also", "//cdn.example/", "paths such as"),
    ("rewarm_also", "/a\tb", "paths such as"),
])
def test_bad_values_name_the_setting(key: str, value: str, words: str) -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings(env={}, cli={key: value})
    assert key in str(raised.value) and words in str(raised.value)


@pytest.mark.parametrize("name", ["stoker", "edge-1", "cdn.example:eu/1", "X" * 64])
def test_a_cache_name_is_a_token(name: str) -> None:
    assert load_settings(env={}, cli={"cache_name": name}).cache_name == name


def test_invalid_toml_and_missing_file_are_clear(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="not valid TOML"):
        load_settings(config_path=write(tmp_path, "origin = "), env={})
    with pytest.raises(SettingsError, match="does not exist"):
        load_settings(config_path=tmp_path / "nope.toml", env={})


def test_rules_are_read_from_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[[rule]]\npath = "/wp-admin"\nbypass = true\n'
                           '[[rule]]\nttl = "1h"\nbypass_cookies = ["wordpress_logged_in_*"]\n')
    settings = load_settings(config_path=path, env={})
    assert settings.rules[0].bypass and settings.rules[0].path == "/wp-admin"
    assert settings.rules[1].ttl is not None and settings.rules[1].ttl.ttl == 3600


def test_bad_rule_names_its_position(tmp_path: Path) -> None:
    path = write(tmp_path, '[[rule]]\nttl = "soon"\n')
    with pytest.raises(SettingsError, match=r"\[\[rule\]\] #1: ttl"):
        load_settings(config_path=path, env={})


def test_describe_lists_every_setting() -> None:
    rows = {row.key: row for row in describe()}
    assert set(rows) == set(FIELDS)
    assert rows["listen"].variable == "STOKER_LISTEN"
    assert (rows["refresh_interval"].default, rows["l1_max_bytes"].default) == ('"1d"',
                                                                               '"256MiB"')
    assert rows["origin"].value is None and rows["compress"].value == "true"


def test_every_shown_value_reads_back_as_itself(tmp_path: Path) -> None:
    path = write(tmp_path, 'listen = "0.0.0.0:80"\nkeep_stale = "90m"\n'
                           'l2_queue_max_bytes = "8MiB"\nsite_url = ["https://a.example"]\n'
                           'warm_variants = [{ "accept-encoding" = "br" }]\n')
    loaded = load_settings(config_path=path, env={})
    shown = "\n".join(f"{row.key} = {row.value}" for row in describe(loaded)
                      if row.value is not None)
    (tmp_path / "again").mkdir()
    again = write(tmp_path / "again", shown)
    assert load_settings(config_path=again, env={}) == loaded


@given(st.integers(min_value=0, max_value=10**7), st.sampled_from([0.001, 1, 60, 3600, 86400]))
def test_durations_read_back(count: int, unit: float) -> None:
    assert parse_duration(format_duration(count * unit)) == count * unit


@given(st.integers(min_value=0, max_value=2**50))
def test_sizes_read_back(size: int) -> None:
    assert parse_size(format_size(size)) == size


@given(st.integers(min_value=0, max_value=10**9))
def test_plain_numbers_are_seconds_and_bytes(n: int) -> None:
    assert parse_duration(n) == n and parse_duration(str(n)) == n
    assert parse_size(n) == n and parse_size(str(n)) == n


@pytest.mark.parametrize(("text", "seconds"), [("500ms", 0.5), ("90s", 90), ("5m", 300),
                                               ("2h", 7200), ("1d", 86400)])
def test_duration_units(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(("text", "size"), [("512KiB", 512 * 1024), ("256MB", 256 * 1024**2),
                                            ("4GiB", 4 * 1024**3), ("10k", 10240)])
def test_size_units(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_kept_override_headers_are_read_lower_cased_once() -> None:
    settings = load_settings(env={"STOKER_KEEP_OVERRIDE_HEADERS": "X-Original-URL, forwarded,"
                                                                  " x-original-url"})
    assert settings.keep_override_headers == ("x-original-url", "forwarded")


@given(st.text())
def test_parsers_raise_only_value_error(text: str) -> None:
    for parse in (parse_duration, parse_size):
        with contextlib.suppress(ValueError):
            parse(text)


def test_origin_and_warm_concurrency_settings() -> None:
    defaults = load_settings(env={})
    assert (defaults.origin_max_concurrency, defaults.warm_max_concurrency) == (16, 8)
    env = {"STOKER_ORIGIN_MAX_CONCURRENCY": "4", "STOKER_WARM_MAX_CONCURRENCY": "2"}
    settings = load_settings(env=env)
    assert (settings.origin_max_concurrency, settings.warm_max_concurrency) == (4, 2)
    with pytest.raises(SettingsError, match=r"'origin_max_concurrency'.*at least 2"):
        load_settings(env={"STOKER_ORIGIN_MAX_CONCURRENCY": "1"})
    with pytest.raises(SettingsError, match="'warm_max_concurrency'"):
        load_settings(env={"STOKER_WARM_MAX_CONCURRENCY": "0"})


def test_warm_jobs_follow_the_warm_concurrency_unless_set() -> None:
    assert load_settings(env={}).warm_jobs == 8
    assert load_settings(env={"STOKER_WARM_MAX_CONCURRENCY": "12"}).warm_jobs == 12
    for workers in ("0", "3"):
        settings = load_settings(env={"STOKER_WARM_MAX_CONCURRENCY": "12",
                                      "STOKER_WARM_WORKERS": workers})
        assert settings.warm_jobs == int(workers)


def test_purge_mode_and_the_rewarm_of_small_purges_and_list_pages() -> None:
    defaults = load_settings(env={})
    assert (defaults.purge_mode, defaults.rewarm_now_max, defaults.rewarm_also) == (
        "hard", 10, ())
    settings = load_settings(env={"STOKER_PURGE_MODE": "Soft", "STOKER_REWARM_NOW_MAX": "0",
                                  "STOKER_REWARM_ALSO": "/, /blog/, /"})
    assert (settings.purge_mode, settings.rewarm_now_max, settings.rewarm_also) == (
        "soft", 0, ("/", "/blog/"))


def test_origin_host_is_one_of_the_sites_aliases(tmp_path: Path) -> None:
    path = write(tmp_path, 'origin_host = "wp.internal"\nsite_aliases = ["cms:8000", '
                           '"wp.internal"]\nsite_url = "https://www.example.com"\n')
    settings = load_settings(config_path=path, env={})
    assert settings.aliases == ("cms:8000", "wp.internal")
    hosts = settings.site_hosts
    assert hosts.covered("http", "wp.internal") == hosts.everywhere()
    assert ("https", "www.example.com") in hosts.everywhere()
    assert not any(host == "wp.internal" for _, host in hosts.everywhere())  # never its own
    bare = load_settings(config_path=None, env={})
    assert bare.aliases == () and bare.site_hosts.covered("http", "wp.internal") == (
        ("http", "wp.internal"),)


def test_refresh_ahead_settings_default_parse_and_name_themselves(tmp_path: Path) -> None:
    defaults = load_settings(config_path=None, env={}, cli={})
    assert (defaults.refresh_ahead, defaults.refresh_window) == (30.0, 3600.0)
    path = write(tmp_path, 'refresh_ahead = "0"\nrefresh_window = "10m"\n')
    off = load_settings(config_path=path, env={}, cli={})
    assert (off.refresh_ahead, off.refresh_window) == (0.0, 600.0)
    with pytest.raises(SettingsError, match="refresh_window"):
        load_settings(config_path=None, env={"STOKER_REFRESH_WINDOW": "0"}, cli={})
    with pytest.raises(SettingsError, match="refresh_ahead"):
        load_settings(config_path=None, env={"STOKER_REFRESH_AHEAD": "-1s"}, cli={})


def test_the_error_page_is_read_whole_once_and_a_bad_one_names_the_setting(
        tmp_path: Path) -> None:
    page = tmp_path / "502.html"
    page.write_bytes(b"<h1>down</h1>")
    assert read_error_page(load_settings(cli={"error_page": None})) is None
    assert read_error_page(load_settings(cli={"error_page": str(page)})) == b"<h1>down</h1>"
    page.write_bytes(b"x" * ERROR_PAGE_MAX)  # the most accepted
    assert len(read_error_page(load_settings(cli={"error_page": str(page)})) or b"") == (
        ERROR_PAGE_MAX)
    page.write_bytes(b"x" * (ERROR_PAGE_MAX + 1))
    for bad, words in ((page, "larger than 1 MiB"), (tmp_path / "gone.html", "not a readable"),
                       (tmp_path, "not a readable")):
        with pytest.raises(SettingsError, match=f"^error_page: {bad} .*{words}"):
            read_error_page(load_settings(cli={"error_page": str(bad)}))

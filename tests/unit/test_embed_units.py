"""The embedding API's pure parts: when a traffic batch is due, the page decorator's
headers and tags, rules given in code, the admin mount's paths, the app's hosts."""

from __future__ import annotations

import pytest

from stoker.admin.guard import route_path
from stoker.app.traffic_warm import Known, batch_due
from stoker.config.rules import Rule, rules_from
from stoker.config.settings import settings_from
from stoker.config.settings.embedded import as_app_settings
from stoker.embed.middleware import admin_path, under
from stoker.embed.page import accepted, cache_control, page_tags, path_params


def test_a_batch_is_due_on_signals_wake_times_and_rechecks_only() -> None:
    assert batch_due(Known(None, False, None), 100.0)  # never looked
    assert batch_due(Known(None, True, 99.0), 100.0)  # new jobs
    assert batch_due(Known(100.0, False, 99.0), 100.0)  # a deadline due
    assert not batch_due(Known(101.0, False, 99.0), 100.0)
    assert not batch_due(Known(None, False, 99.0), 100.0, recheck=30.0)
    assert batch_due(Known(None, False, 70.0), 100.0, recheck=30.0)


def test_page_headers_and_tags() -> None:
    assert cache_control(300, 30, 0) == "max-age=300, stale-while-revalidate=30"
    assert page_tags(lambda slug: [f"post-{slug}", "posts"], {"slug": "a", "db": 1}) == (
        "post-a posts")
    assert accepted(lambda **params: [], {"a": 1}) == {"a": 1}
    with pytest.raises(ValueError, match="tags"):
        page_tags(lambda: ["two words"], {})
    assert path_params((), {"slug": "a"}) == {"slug": "a"}


def test_rules_from_code_keep_rule_objects_and_validate_tables() -> None:
    kept = Rule(path="/x")
    assert rules_from([kept, {"path": "/", "ttl": 60}])[0] is kept
    with pytest.raises(ValueError, match=r"rules\[0\]: unknown key 'tll'"):
        rules_from([{"tll": 60}])
    with pytest.raises(ValueError, match="rules must be a list"):
        rules_from({"path": "/"})


def test_admin_paths() -> None:
    assert admin_path("/stoker/") == "/stoker" and admin_path(None) is None
    with pytest.raises(ValueError, match="admin must be a path"):
        admin_path("/")
    assert under("/stoker", "/stoker") and under("/stoker/api", "/stoker")
    assert not under("/stokers", "/stoker")
    assert route_path({"path": "/stoker/api/purge", "root_path": "/stoker"}) == "/api/purge"
    assert route_path({"path": "/stoker", "root_path": "/stoker"}) == "/"
    assert route_path({"path": "/api/purge"}) == "/api/purge"


def test_an_apps_hosts_are_its_own_never_the_listeners() -> None:
    anywhere = as_app_settings(settings_from({})).site_hosts
    assert anywhere.any_host and anywhere.known("http", "app.example") and not anywhere.own
    named = as_app_settings(settings_from({"site_url": "https://www.example.com"})).site_hosts
    assert named.own == ("www.example.com",) and not named.known("http", "127.0.0.1:8080")
    assert settings_from({}).site_hosts.known("http", "127.0.0.1:8080")  # the proxy's

"""``stoker check``'s line on warmed origins: what a full run fills, and the warnings."""

from __future__ import annotations

from stoker.cache.hits import SeenOrigin
from stoker.cli.check import origins_verdict
from stoker.config.settings import settings_from

NOW = 1_700_000_000.0


def test_before_any_visitor_it_names_what_warm_runs_fill() -> None:
    settings = settings_from({"origin": "http://o", "site_url": "https://example.com"})
    assert origins_verdict(settings, [], NOW) == (
        "warm runs fill https://example.com (no visitor seen yet)")


def test_visitors_on_site_url_pass_without_a_warning() -> None:
    settings = settings_from({"origin": "http://o", "site_url": "https://example.com"})
    seen = [SeenOrigin("https://example.com", 500, NOW)]
    assert origins_verdict(settings, seen, NOW) == "warm runs fill https://example.com"


def test_an_http_site_url_with_tls_cert_is_a_warning_before_any_visitor() -> None:
    settings = settings_from({"origin": "http://o", "site_url": "http://example.com",
                              "tls_cert": "/c.pem", "tls_key": "/k.pem"})
    assert origins_verdict(settings, [], NOW) == (
        "warm runs fill http://example.com; warning: tls_cert is set, so visitors arrive on "
        "https, but site_url names http://example.com: set it to https://")


def test_visitors_elsewhere_are_warnings_with_what_to_set() -> None:
    settings = settings_from({"origin": "http://o", "site_url": "http://example.com"})
    seen = [SeenOrigin("https://example.com", 300, NOW), SeenOrigin("", 1, NOW)]
    said = origins_verdict(settings, seen, NOW)
    assert said.startswith("warm runs fill http://example.com, https://example.com; "
                           "warning: visitors arrive on https://example.com (300 of 301 "
                           "visits)")
    assert "; warning: warm runs fill http://example.com, which no visitor read" in said

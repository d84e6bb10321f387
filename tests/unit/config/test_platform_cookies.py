"""The presets' cookie lists as one table: whose cookie a name is, and whether personal."""

from __future__ import annotations

from fnmatch import fnmatchcase

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.config.platform_cookies import PERSONAL_COOKIES, is_personal, platform_cookie
from stoker.config.presets import PRESETS


def test_the_table_holds_every_presets_bypass_cookies() -> None:
    assert {(pattern, name) for name, preset in PRESETS.items()
            for pattern in preset.bypass_cookies} == set(PERSONAL_COOKIES)


@pytest.mark.parametrize(("name", "preset", "key"), [
    ("comment_author_url_5f2c", "wordpress", "bypass_cookies"),
    ("wp_woocommerce_session_5f2c", "woocommerce", "bypass_cookies"),
    ("django_language", "django", "bypass_cookies"),
    ("Drupal.visitor.mail", "drupal", "bypass_cookies"),
    ("csrftoken", "django", "vary_ignore_cookies"),
    ("store_notice7", "woocommerce", "ignore_cookies"),
    ("has_js", "drupal", "ignore_cookies"),
])
def test_a_cookie_is_named_with_its_platform_and_list(name: str, preset: str,
                                                      key: str) -> None:
    found = platform_cookie(name)
    assert found is not None and (found.preset, found.key) == (preset, key)
    assert found.personal is (key == "bypass_cookies") is is_personal(name)
    assert found.config == f'preset = "{preset}"\n'


@pytest.mark.parametrize("name", ["_ga", "cookie_consent", "sessionid", "theme"])
def test_what_every_preset_shares_or_none_lists_has_no_platform(name: str) -> None:
    assert platform_cookie(name) is None


@given(st.sampled_from([pattern for pattern, _ in PERSONAL_COOKIES]),
       st.text("abcxyz_0123456789", max_size=8))
def test_a_name_personal_to_any_preset_is_never_named_harmless(pattern: str,
                                                               fill: str) -> None:
    name = pattern.replace("*", fill)
    assert fnmatchcase(name, pattern) and is_personal(name)
    found = platform_cookie(name)
    assert found is None or found.personal  # None: a session cookie every preset shares

"""The Credentials page, rendered from GET /api/warm/credentials' JSON: set or not, when,
the fingerprint (a value is never given to it), the forms that set and remove, and what to
do when none is allowed."""

from __future__ import annotations

from typing import Any

from stoker.admin.views.credentials import api_path, credentials_html, set_form

NOW = 1_800_000_000.0


def credential(name: str, **overrides: Any) -> dict[str, Any]:
    return {"name": name, "set": True, "fingerprint": "sha256:0123456789abcdef",
            "set_at": NOW - 120, **overrides}


def test_each_credential_shows_its_kind_state_and_fingerprint() -> None:
    out = credentials_html([credential("header:x-bypass"),
                            credential("cookie:age_ok", set=False, fingerprint=None,
                                       set_at=None)], NOW)
    assert '<span class="tag">header</span> <code>x-bypass</code>' in out
    assert '<span class="tag">cookie</span> <code>age_ok</code>' in out
    assert "<code>sha256:0123456789abcdef</code>" in out and "2 min ago" in out
    assert '<span class="tag ok">set</span>' in out and '<span class="tag">not set</span>' in out
    assert out.count(">Remove</button>") == 1 and 'data-method="DELETE"' in out
    assert out.count('type="password"') == 2
    live = out.index("<div data-live>")
    assert out.index("<form") > out.index("</div>", live)  # typing survives a refresh


def test_a_set_form_puts_the_value_to_the_named_credential_and_clears_it() -> None:
    out = set_form('cookie:a"b')
    assert 'data-api="/api/warm/credentials/{name}"' in out and 'data-method="PUT"' in out
    assert '<input type="hidden" name="name" value="cookie:a&quot;b">' in out
    assert "data-reset" in out and 'name="value"' in out and "value=\"\"" not in out
    assert api_path("header:x/y") == "/api/warm/credentials/header%3Ax%2Fy"


def test_with_none_allowed_the_page_says_how_to_allow_them() -> None:
    out = credentials_html([], NOW)
    assert "<code>warm_credentials</code>" in out and "warm_credentials = [" in out
    assert "<form" not in out and "data-live" not in out and 'id="live"' not in out

"""Admin auth (pure), the loopback rule and the admin URL."""

from __future__ import annotations

import pytest

from stoker.admin.auth import authenticate, bearer_token, fingerprint, host_of
from stoker.config.settings import (
    SettingsError,
    admin_url,
    is_loopback_listen,
    require_safe_admin,
    settings_from,
)


def test_fingerprint_is_short_stable_and_not_the_token() -> None:
    assert fingerprint("s3cret") == fingerprint("s3cret")
    assert len(fingerprint("s3cret")) == 12 and "s3cret" not in fingerprint("s3cret")
    assert fingerprint("s3cret") != fingerprint("s3cret2")


@pytest.mark.parametrize(("header", "token"), [
    ("Bearer abc", "abc"), ("bearer  abc ", "abc"), ("Basic abc", None), ("Bearer", None),
    ("", None), (None, None),
])
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_authenticate() -> None:
    assert authenticate("tok", "tok").allowed
    assert authenticate("tok", "tok").actor == f"token:{fingerprint('tok')}"
    assert not authenticate("tok", "tik").allowed
    assert authenticate("tok", None).actor == "anonymous"
    assert not authenticate("tok", None).allowed
    assert authenticate(None, None).allowed  # no token configured: open (loopback only)


@pytest.mark.parametrize(("listen", "loopback"), [
    ("127.0.0.1:8081", True), ("127.1.2.3:1", True), ("[::1]:8081", True),
    ("localhost:8081", True), ("0.0.0.0:8081", False), ("[::]:8081", False),
    ("10.0.0.5:8081", False), ("admin.example.com:8081", False),
])
def test_loopback_listen(listen: str, loopback: bool) -> None:
    assert is_loopback_listen(listen) is loopback


def test_non_loopback_admin_needs_a_token() -> None:
    require_safe_admin(settings_from({"admin_listen": "127.0.0.1:9"}))
    require_safe_admin(settings_from({"admin_listen": "0.0.0.0:9", "admin_token": "t"}))
    with pytest.raises(SettingsError, match="admin_token"):
        require_safe_admin(settings_from({"admin_listen": "0.0.0.0:9"}))


def test_admin_url() -> None:
    assert admin_url(settings_from({}), env={}) == "http://127.0.0.1:8081"
    assert admin_url(settings_from({"admin_listen": "0.0.0.0:9"}), env={}) == (
        "http://127.0.0.1:9")
    assert admin_url(settings_from({"admin_listen": "[::]:9"}), env={}) == "http://[::1]:9"
    assert admin_url(settings_from({}), env={"STOKER_ADMIN_URL": "http://h:1/"}) == "http://h:1"


def test_host_of() -> None:
    assert [host_of(a) for a in ("127.0.0.1:8081", "[::1]:80", "localhost", "::1")] == [
        "127.0.0.1", "::1", "localhost", "::1"]

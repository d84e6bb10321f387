"""Admin auth (pure), the loopback rule, the admin URL and the PURGE method's allow list."""

from __future__ import annotations

import ipaddress

import pytest

from stoker.admin.auth import authenticate, bearer_token, fingerprint, host_of
from stoker.config.settings import (
    SettingsError,
    admin_url,
    is_loopback_listen,
    require_safe_admin,
    settings_from,
)
from stoker.purge.method import asked_soft, parse_networks, purge_allowed
from stoker.purge.scope import PurgeRequestError


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


def test_purge_allow_list() -> None:
    networks = parse_networks(["127.0.0.1", "10.0.0.0/8", "::1"])
    assert purge_allowed("127.0.0.1", ()) == "disabled"
    assert purge_allowed("127.0.0.1", networks) == "allowed"
    assert purge_allowed("10.9.8.7", networks) == "allowed"
    assert purge_allowed("::ffff:10.1.1.1", networks) == "allowed"
    assert purge_allowed("::1", networks) == "allowed"
    assert purge_allowed("192.168.1.1", networks) == "forbidden"
    assert purge_allowed(None, networks) == "forbidden"
    assert purge_allowed("not-an-ip", networks) == "forbidden"
    assert networks[1] == ipaddress.ip_network("10.0.0.0/8")
    with pytest.raises(SettingsError, match="purge_allow"):
        settings_from({"purge_allow": ["10.0.0.0/33"]})


def test_soft_header_says_soft_hard_or_nothing() -> None:
    assert asked_soft([(b"x-purge-soft", b"1")]) is True
    assert asked_soft([(b"stoker-soft", b" TRUE ")]) is True
    assert asked_soft([(b"x-purge-soft", b"0")]) is False
    assert asked_soft([(b"stoker-soft", b"off")]) is False
    assert asked_soft([(b"x-purge-soft", b"0"), (b"stoker-soft", b"yes")]) is True
    assert asked_soft([]) is None
    assert asked_soft([(b"x-other", b"1")]) is None


def test_a_soft_header_that_is_neither_true_nor_false_is_refused_by_name() -> None:
    with pytest.raises(PurgeRequestError, match="x-purge-soft: 'maybe'"):
        asked_soft([(b"x-purge-soft", b"maybe")])
    with pytest.raises(PurgeRequestError, match="stoker-soft"):
        asked_soft([(b"stoker-soft", b"")])

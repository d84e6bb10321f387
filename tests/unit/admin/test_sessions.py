"""Dashboard sessions: kept across a restart as digests, revoked by logout, by token
rotation and by time, found only on the site they were opened on; one-time codes spent
once (fake clock, real files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stoker.admin.auth import fingerprint
from stoker.admin.sessions import (
    COOKIE,
    FILE,
    MAX_SESSIONS,
    ONCE_LIFETIME,
    Place,
    Session,
    Sessions,
    cookie_value,
    digest,
    kept,
    place_of,
    set_cookie,
)
from stoker.clock import FakeClock
from stoker.http.forwarded import TrustedProxies

LIFETIME = 3600.0
SITE = "http://127.0.0.1:8081"


def book(data_dir: Path, clock: FakeClock, token: str | None = "s3cret-admin") -> Sessions:
    return Sessions.load(data_dir, clock, token=token, lifetime=LIFETIME)


async def test_a_session_survives_a_restart_and_the_file_holds_no_usable_id(
        tmp_path: Path) -> None:
    clock = FakeClock()
    secret, session = await book(tmp_path, clock).open(SITE)
    again = book(tmp_path, clock)
    assert again.find(secret, SITE) == session
    text = (tmp_path / FILE).read_text()
    assert secret not in text and digest(secret) in text and "s3cret-admin" not in text
    assert json.loads(text)[0]["token"] == fingerprint("s3cret-admin")
    assert (tmp_path / FILE).stat().st_mode & 0o777 == 0o600


async def test_a_session_is_no_session_on_another_site(tmp_path: Path) -> None:
    clock = FakeClock()
    sessions = book(tmp_path, clock)
    secret, session = await sessions.open(SITE)
    assert book(tmp_path, clock).find(secret, SITE) == session  # the site was saved
    for elsewhere in ("http://127.0.0.1:8080", "https://127.0.0.1:8081",
                      "http://localhost:8081", ""):
        assert sessions.find(secret, elsewhere) is None


async def test_a_session_saved_before_binding_is_found_nowhere(tmp_path: Path) -> None:
    clock = FakeClock()
    await book(tmp_path, clock).open(SITE)
    rows = json.loads((tmp_path / FILE).read_text())
    for row in rows:
        del row["site"]
    (tmp_path / FILE).write_text(json.dumps([{**row, "digest": digest("old")}
                                             for row in rows]))
    assert book(tmp_path, clock).find("old", SITE) is None


def scope(headers: list[tuple[bytes, bytes]], *, scheme: str = "http",
          peer: str = "192.0.2.1") -> dict[str, object]:
    return {"type": "http", "scheme": scheme, "headers": headers, "client": (peer, 1)}


@pytest.mark.parametrize(("headers", "scheme", "peer", "place"), [
    ([(b"host", b"Admin.Test:8081")], "http", "192.0.2.1",
     Place("http://admin.test:8081", False)),
    ([(b"host", b"a.test")], "https", "192.0.2.1", Place("https://a.test", True)),
    ([(b"host", b"a.test"), (b"x-forwarded-proto", b"https")], "http", "127.0.0.1",
     Place("https://a.test", True)),
    ([(b"host", b"a.test"), (b"x-forwarded-proto", b"https")], "http", "192.0.2.1",
     Place("http://a.test", False)),
    ([], "http", "192.0.2.1", Place("http://", False)),
])
def test_place_of(headers: list[tuple[bytes, bytes]], scheme: str, peer: str,
                  place: Place) -> None:
    assert place_of(scope(headers, scheme=scheme, peer=peer), TrustedProxies()) == place


async def test_find_at_reads_the_cookie_named_for_the_scheme_in_any_crumb(
        tmp_path: Path) -> None:
    sessions = book(tmp_path, FakeClock())
    plain = place_of(scope([(b"host", b"a.test")]), TrustedProxies())
    secure = place_of(scope([(b"host", b"a.test")], scheme="https"), TrustedProxies())
    secret, session = await sessions.open(plain.site)
    crumbs = [(b"host", b"a.test"), (b"cookie", b"theme=dark"),
              (b"cookie", f"{COOKIE}={secret}".encode())]
    assert sessions.find_at(scope(crumbs), plain) == session
    assert sessions.find_at(scope(crumbs[:2]), plain) is None
    secured, record = await sessions.open(secure.site)
    named = [(b"host", b"a.test"), (b"cookie", f"__Host-{COOKIE}={secured}".encode())]
    assert sessions.find_at(scope(named, scheme="https"), secure) == record
    unprefixed = [(b"host", b"a.test"), (b"cookie", f"{COOKIE}={secured}".encode())]
    assert sessions.find_at(scope(unprefixed, scheme="https"), secure) is None


async def test_logout_rotation_and_expiry_each_revoke(tmp_path: Path) -> None:
    clock = FakeClock()
    sessions = book(tmp_path, clock)
    first, _ = await sessions.open(SITE)
    second, _ = await sessions.open(SITE)
    assert (await sessions.close(first)) is not None and sessions.find(first, SITE) is None
    assert book(tmp_path, clock).find(first, SITE) is None  # the logout was saved
    assert book(tmp_path, clock, token="rotated").find(second, SITE) is None
    clock.advance(LIFETIME - 1)
    assert sessions.find(second, SITE) is not None
    clock.advance(1)
    assert sessions.find(second, SITE) is None
    assert await sessions.close("never-issued") is None
    third, record = await sessions.open(SITE)
    assert sessions.holds(record)
    await sessions.close(third)
    assert not sessions.holds(record)
    assert sessions.find(None, SITE) is None and sessions.find("", SITE) is None


async def test_the_newest_sessions_are_kept_up_to_the_bound(tmp_path: Path) -> None:
    clock = FakeClock()
    sessions = book(tmp_path, clock)
    secrets = []
    for _ in range(MAX_SESSIONS + 3):
        secrets.append((await sessions.open(SITE))[0])
        clock.advance(1)
    assert [sessions.find(s, SITE) is not None for s in secrets[:3]] == [False] * 3
    assert all(sessions.find(s, SITE) is not None for s in secrets[3:])
    assert len(json.loads((tmp_path / FILE).read_text())) == MAX_SESSIONS


def test_kept_drops_the_expired_and_the_other_tokens() -> None:
    rows = {"a": Session("a", "t", 1.0, 10.0), "b": Session("b", "u", 2.0, 10.0),
            "c": Session("c", "t", 3.0, 5.0), "d": Session("d", "t", 4.0, 10.0)}
    assert list(kept(rows, 6.0, "t", 10)) == ["a", "d"]
    assert list(kept(rows, 6.0, "t", 1)) == ["d"]


def test_an_unreadable_file_starts_an_empty_book(tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / FILE).write_text("{not json")
    assert book(tmp_path, FakeClock()).find("x", SITE) is None
    assert "could not be read" in caplog.text


def test_one_time_codes_log_in_once_and_expire() -> None:
    clock = FakeClock()
    sessions = Sessions.load(None, clock, token="tok", lifetime=LIFETIME)
    code = sessions.once()
    assert sessions.spend(code) and not sessions.spend(code)
    late = sessions.once()
    clock.advance(ONCE_LIFETIME)
    assert not sessions.spend(late)
    assert not sessions.spend("made-up")


@pytest.mark.parametrize(("header", "value"), [
    (f"{COOKIE}=abc", "abc"), (f"a=1; {COOKIE}=abc; b=2", "abc"), ("a=1", None),
    (f"{COOKIE}=", None), (None, None), (f"x{COOKIE}=abc", None),
])
def test_cookie_value(header: str | None, value: str | None) -> None:
    assert cookie_value(header) == value


def test_the_cookie_is_httponly_strict_and_host_prefixed_secure_over_https() -> None:
    plain = set_cookie("v", max_age=60, secure=False)
    assert plain == f"{COOKIE}=v; Path=/; Max-Age=60; HttpOnly; SameSite=Strict"
    assert set_cookie("v", max_age=60, secure=True) == (
        f"__Host-{COOKIE}=v; Path=/; Max-Age=60; HttpOnly; SameSite=Strict; Secure")
    assert "Max-Age=0" in set_cookie("", max_age=-5, secure=False)

"""Dashboard sessions: kept across a restart as digests, revoked by logout, by token
rotation and by time; one-time codes spent once (fake clock, real files)."""

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
    Session,
    Sessions,
    cookie_value,
    digest,
    kept,
    set_cookie,
)
from stoker.clock import FakeClock

LIFETIME = 3600.0


def book(data_dir: Path, clock: FakeClock, token: str | None = "s3cret-admin") -> Sessions:
    return Sessions.load(data_dir, clock, token=token, lifetime=LIFETIME)


async def test_a_session_survives_a_restart_and_the_file_holds_no_usable_id(
        tmp_path: Path) -> None:
    clock = FakeClock()
    secret, session = await book(tmp_path, clock).open()
    again = book(tmp_path, clock)
    assert again.find(secret) == session
    text = (tmp_path / FILE).read_text()
    assert secret not in text and digest(secret) in text and "s3cret-admin" not in text
    assert json.loads(text)[0]["token"] == fingerprint("s3cret-admin")
    assert (tmp_path / FILE).stat().st_mode & 0o777 == 0o600


async def test_logout_rotation_and_expiry_each_revoke(tmp_path: Path) -> None:
    clock = FakeClock()
    sessions = book(tmp_path, clock)
    first, _ = await sessions.open()
    second, _ = await sessions.open()
    assert (await sessions.close(first)) is not None and sessions.find(first) is None
    assert book(tmp_path, clock).find(first) is None  # the logout was saved
    assert book(tmp_path, clock, token="rotated").find(second) is None
    clock.advance(LIFETIME - 1)
    assert sessions.find(second) is not None
    clock.advance(1)
    assert sessions.find(second) is None
    assert await sessions.close("never-issued") is None
    third, record = await sessions.open()
    assert sessions.holds(record)
    await sessions.close(third)
    assert not sessions.holds(record)
    assert sessions.find(None) is None and sessions.find("") is None


async def test_the_newest_sessions_are_kept_up_to_the_bound(tmp_path: Path) -> None:
    clock = FakeClock()
    sessions = book(tmp_path, clock)
    secrets = []
    for _ in range(MAX_SESSIONS + 3):
        secrets.append((await sessions.open())[0])
        clock.advance(1)
    assert [sessions.find(s) is not None for s in secrets[:3]] == [False] * 3
    assert all(sessions.find(s) is not None for s in secrets[3:])
    assert len(json.loads((tmp_path / FILE).read_text())) == MAX_SESSIONS


def test_kept_drops_the_expired_and_the_other_tokens() -> None:
    rows = {"a": Session("a", "t", 1.0, 10.0), "b": Session("b", "u", 2.0, 10.0),
            "c": Session("c", "t", 3.0, 5.0), "d": Session("d", "t", 4.0, 10.0)}
    assert list(kept(rows, 6.0, "t", 10)) == ["a", "d"]
    assert list(kept(rows, 6.0, "t", 1)) == ["d"]


def test_an_unreadable_file_starts_an_empty_book(tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / FILE).write_text("{not json")
    assert book(tmp_path, FakeClock()).find("x") is None
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


def test_the_cookie_is_httponly_strict_and_secure_over_https() -> None:
    plain = set_cookie("v", max_age=60, secure=False)
    assert plain == f"{COOKIE}=v; Path=/; Max-Age=60; HttpOnly; SameSite=Strict"
    assert set_cookie("v", max_age=60, secure=True).endswith("; Secure")
    assert "Max-Age=0" in set_cookie("", max_age=-5, secure=False)

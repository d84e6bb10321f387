"""The guard's pure decisions: which paths it checks how, and the origin of a write."""

from __future__ import annotations

from typing import Any

import pytest

from stoker.admin.auth import AuthDecision
from stoker.admin.guard import check, kind, origin_of, too_many, write_refusal
from stoker.admin.login_limit import Refused

HOST = "127.0.0.1:8081"
ALLOWED = frozenset({"https://admin.example.com"})


@pytest.mark.parametrize(("path", "expected"), [
    ("/healthz", "open"), ("/readyz", "open"), ("/login", "public"), ("/logout", "public"),
    ("/static/dashboard.js", "public"), ("/api/status", "api"), ("/api", "api"),
    ("/metrics", "api"), ("/", "page"), ("/warm", "page"), ("/apix", "page"),
])
def test_kind(path: str, expected: str) -> None:
    assert kind(path) == expected


@pytest.mark.parametrize(("url", "origin"), [
    ("http://127.0.0.1:8081/page?x=1", "http://127.0.0.1:8081"),
    ("HTTPS://Admin.Example.com", "https://admin.example.com"), ("null", ""), ("", ""),
])
def test_origin_of(url: str, origin: str) -> None:
    assert origin_of(url) == origin


@pytest.mark.parametrize(("origin", "referer", "by_cookie", "refused"), [
    (f"http://{HOST}", None, True, False),
    (None, f"http://{HOST}/", True, False),  # no Origin: the Referer's origin
    ("https://admin.example.com", None, True, False),  # on the allow-list
    ("https://evil.example", None, False, True),
    ("https://evil.example", f"http://{HOST}/", True, True),  # Origin wins over Referer
    (None, "https://evil.example/x", False, True),
    ("null", None, False, True),
    (None, None, False, False),  # an API client (curl) with its token
    (None, None, True, True),  # a browser always sends one: a cookie write without is forged
])
def test_write_refusal(origin: str | None, referer: str | None, by_cookie: bool,
                       refused: bool) -> None:
    refusal = write_refusal(origin, referer, HOST, ALLOWED, by_cookie=by_cookie)
    assert (refusal is not None) is refused
    if refusal is not None:
        assert refusal.status == 403


def scope(method: str, host: str, **headers: str) -> dict[str, Any]:
    fields = [(b"host", host.encode())] + [(k.encode(), v.encode()) for k, v in headers.items()]
    return {"method": method, "headers": fields}


def test_check_in_order_loopback_then_origin_then_auth() -> None:
    denied, allowed = AuthDecision(False, "anonymous"), AuthDecision(True, "token:x")
    refusal = check(scope("GET", "evil.example"), None, allowed, by_cookie=False)
    assert refusal is not None and refusal.status == 403 and "loopback" in refusal.error
    refusal = check(scope("POST", HOST, origin="https://evil.example"), "t", denied,
                    by_cookie=False)
    assert refusal is not None and refusal.status == 403  # before the 401
    refusal = check(scope("GET", HOST), "t", denied, by_cookie=False)
    assert refusal is not None and refusal.status == 401
    assert check(scope("POST", HOST, origin=f"http://{HOST}"), "t", allowed,
                 by_cookie=True) is None


@pytest.mark.parametrize(("wait", "seconds"), [(0.3, "1"), (59.2, "60")])
def test_too_many_names_the_client_and_says_when_to_retry(wait: float, seconds: str) -> None:
    refusal = too_many("203.0.113.1", Refused(wait))
    assert refusal.status == 429 and "203.0.113.1" in refusal.error
    assert refusal.extra == ((b"retry-after", seconds.encode()),)

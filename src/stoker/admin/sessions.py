"""Dashboard sessions: server-side records behind an HttpOnly cookie, and one-time logins.

A login with the admin token opens a session: the browser holds a random id in the
session cookie, the server only the id's SHA-256 digest, the fingerprint of the admin
token it was opened with, the listener it was opened on (its :class:`Place`'s ``site``,
``scheme://host:port`` as the browser addressed it), and when it ends.  Over HTTPS the
cookie is ``__Host-stoker_session`` (a browser keeps it only ``Secure``, ``Path=/`` and
host-only, so no plain-HTTP page or other host sets or shadows it), else
``stoker_session``.  Since a browser sends it to every port of the host, the public
listener strips both names from every request before anything reads or forwards it
(:func:`~stoker.http.cookies.one_cookie_field`).

Sessions persist across restarts, in ``data_dir/`` :data:`FILE`: an operator watching
the dashboard expects a deploy or a crash-and-restart of Stoker to leave them logged in
(the page's event stream reconnects by itself), as they expect it of any web admin.  The
file holds digests only, so reading it gives no usable cookie.  A restart with another
``admin_token`` (token rotation) revokes every session opened with the old one, and so
does ``POST /logout`` its own.

One-time login links (``/login?once=…``, printed by ``stoker demo``) are kept in memory
only: each logs in once, then is spent, and none survives a restart.

Invariants:
- A session is valid only until ``expires`` (``admin_session_lifetime`` after its
  login) and only for the admin token it was opened with; an expired one is dropped.
- A session is found only on the site it was opened on, and only in the cookie named
  for that site's scheme: presented to another listener, Host or scheme it is no
  session (sessions saved before they were bound are found nowhere).
- At most :data:`MAX_SESSIONS` sessions are kept: a new login drops the oldest beyond.
- The file is written whole and renamed into place (never half-written); a file that
  cannot be read starts an empty book (logged), never a failure to serve.
- An id, a one-time code and the admin token are never logged or stored as such.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from stoker.admin.auth import fingerprint
from stoker.clock import Clock
from stoker.http.cookies import SESSION_COOKIE, session_cookie_name
from stoker.http.forwarded import TrustedProxies
from stoker.proxy.request import request_scheme

log = logging.getLogger("stoker.admin")

COOKIE: Final = SESSION_COOKIE
FILE: Final = "admin-sessions.json"
MAX_SESSIONS: Final = 100
ONCE_LIFETIME: Final = 3600.0
"""Seconds a one-time login link stays usable."""
MAX_ONCE: Final = 16
"""One-time codes outstanding at once (the oldest beyond are spent)."""


def digest(secret: str) -> str:
    """The SHA-256 of a session id or one-time code: what the server keeps of it."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Session:
    """One login, as the server keeps it."""

    digest: str
    token: str
    """The fingerprint of the admin token it was opened with ("" when none is configured)."""
    created: float
    expires: float
    site: str = ""
    """The :attr:`Place.site` it was opened on ("" for one saved before sessions were
    bound: it is found nowhere)."""

    @property
    def actor(self) -> str:
        """Who the audit log says acted: ``session:<first 12 hex digits of the digest>``."""
        return f"session:{self.digest[:12]}"

    def valid(self, now: float, token: str) -> bool:
        """Whether it still logs in, at ``now``, under the token fingerprinted ``token``."""
        return now < self.expires and self.token == token


def token_mark(token: str | None) -> str:
    """What sessions remember of the admin token: its fingerprint, "" when none."""
    return fingerprint(token) if token is not None else ""


def kept(sessions: Mapping[str, Session], now: float, token: str, limit: int
         ) -> dict[str, Session]:
    """The sessions still valid at ``now`` under ``token``, the newest ``limit``.  Pure."""
    live = sorted((s for s in sessions.values() if s.valid(now, token)),
                  key=lambda s: s.created, reverse=True)[:limit]
    return {s.digest: s for s in sorted(live, key=lambda s: s.created)}


@dataclass(frozen=True, slots=True)
class Place:
    """Where a request reached the admin listener: ``site`` (``scheme://host`` as the
    browser addressed it, lower case) and whether it came over HTTPS."""

    site: str
    secure: bool

    @property
    def cookie(self) -> str:
        """The session cookie's name here."""
        return session_cookie_name(self.secure)


def place_of(scope: Mapping[str, Any], trusted: TrustedProxies) -> Place:
    """The :class:`Place` of an ASGI request: its scheme (the connection's, or a trusted
    proxy's word for it) and its ``Host``.  Pure."""
    headers = list(scope.get("headers") or ())
    scheme = request_scheme(scope, headers, trusted)
    host = next((bytes(value).decode("latin-1") for name, value in headers
                 if name.lower() == b"host"), "")
    return Place(f"{scheme}://{host.strip().lower()}", scheme == "https")


def cookie_value(header: str | None, name: str = COOKIE) -> str | None:
    """The value of cookie ``name`` in a ``Cookie`` header (``None`` when absent).  Pure."""
    for part in (header or "").split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name and value:
            return value
    return None


def set_cookie(value: str, *, max_age: float, secure: bool) -> str:
    """The ``Set-Cookie`` value for a session (an empty value and 0 clear it): over HTTPS
    (``secure``) the ``__Host-`` name, ``Secure``, ``Path=/`` and no ``Domain``, as that
    prefix demands.  Pure."""
    flags = "; Secure" if secure else ""
    return (f"{session_cookie_name(secure)}={value}; Path=/; Max-Age={max(0, int(max_age))}; "
            f"HttpOnly; SameSite=Strict{flags}")


class Sessions:
    """The dashboard's session book (see the module docstring)."""

    def __init__(self, path: Path | None, clock: Clock, *, token: str | None,
                 lifetime: float) -> None:
        self._path = path
        self._clock = clock
        self._token = token_mark(token)
        self.lifetime = lifetime
        self._sessions: dict[str, Session] = {}
        self._once: dict[str, float] = {}
        self._writing = asyncio.Lock()

    @classmethod
    def load(cls, data_dir: Path | None, clock: Clock, *, token: str | None,
             lifetime: float) -> Sessions:
        """The book kept in ``data_dir`` (in memory only when ``data_dir`` is ``None``)."""
        book = cls(data_dir / FILE if data_dir is not None else None, clock, token=token,
                   lifetime=lifetime)
        if book._path is not None and book._path.exists():
            try:
                rows = json.loads(book._path.read_text())
                found = {row["digest"]: Session(**row) for row in rows}
            except (OSError, ValueError, TypeError, KeyError):
                log.warning("the dashboard sessions in %s could not be read; starting with "
                            "none (everyone logs in again)", book._path, exc_info=True)
                found = {}
            book._sessions = kept(found, clock.now(), book._token, MAX_SESSIONS)
        return book

    def find(self, cookie: str | None, site: str) -> Session | None:
        """The valid session opened on ``site`` whose id is ``cookie``, if any."""
        if not cookie:
            return None
        session = self._sessions.get(digest(cookie))
        return session if session is not None and session.site == site and session.valid(
            self._clock.now(), self._token) else None

    def find_at(self, scope: Mapping[str, Any], place: Place) -> Session | None:
        """The valid session the request ``scope``, made at ``place``, presents, if any."""
        headers = scope.get("headers") or ()
        cookies = b"; ".join(value for name, value in headers if name.lower() == b"cookie")
        return self.find(cookie_value(cookies.decode("latin-1"), place.cookie), place.site)

    def holds(self, session: Session) -> bool:
        """Whether ``session`` is still open and valid (not logged out, expired, revoked)."""
        return self._sessions.get(session.digest) == session and session.valid(
            self._clock.now(), self._token)

    async def open(self, site: str) -> tuple[str, Session]:
        """A new session on ``site``: its id (the cookie's value, never kept) and its
        record."""
        secret = secrets.token_urlsafe(32)
        now = self._clock.now()
        session = Session(digest(secret), self._token, now, now + self.lifetime, site)
        self._sessions[session.digest] = session
        self._sessions = kept(self._sessions, now, self._token, MAX_SESSIONS)
        await self._save()
        return secret, session

    async def close(self, cookie: str | None) -> Session | None:
        """End the session whose id is ``cookie``; the record it had, if any."""
        session = self._sessions.pop(digest(cookie), None) if cookie else None
        if session is not None:
            await self._save()
        return session

    def once(self) -> str:
        """A new one-time login code (see :meth:`spend`)."""
        code = secrets.token_urlsafe(24)
        now = self._clock.now()
        live = {key: until for key, until in self._once.items() if now < until}
        while len(live) >= MAX_ONCE:
            del live[next(iter(live))]
        live[digest(code)] = now + ONCE_LIFETIME
        self._once = live
        return code

    def spend(self, code: str) -> bool:
        """Whether ``code`` is an unspent, unexpired one-time code; spent either way."""
        until = self._once.pop(digest(code), None)
        return until is not None and self._clock.now() < until

    async def _save(self) -> None:
        if self._path is None:
            return
        async with self._writing:  # the book as it is when its turn comes: newest wins
            rows = [asdict(s) for s in self._sessions.values()]
            try:
                await asyncio.to_thread(_write_whole, self._path, json.dumps(rows))
            except OSError:
                log.warning("the dashboard sessions could not be saved to %s; they last "
                            "until a restart", self._path, exc_info=True)


def _write_whole(path: Path, text: str) -> None:
    temporary = path.with_suffix(".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(temporary, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)

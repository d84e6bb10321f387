"""ASGI middleware in front of every admin route: security headers, same-origin writes, auth.

Invariants:
- Every response, errors included, carries ``Cache-Control: no-store`` (any other
  ``Cache-Control`` the app set is replaced) and :data:`SECURITY_HEADERS`: a strict
  Content-Security-Policy (scripts and styles from the listener itself only, no inline
  script, no framing), ``X-Frame-Options: DENY``, ``X-Content-Type-Options: nosniff``.
- On every path but the open probes (:func:`kind`), in this order: with no token
  configured, a request whose ``Host`` is not a loopback name is refused (403; defeats DNS
  rebinding against the open local API); a write (any method but GET/HEAD) whose
  ``Origin`` (or, without one, ``Referer``) is neither the listener's own ``Host`` nor one
  of ``admin_allowed_origins`` is refused (403; a web page cannot purge through a
  browser), and so is a write authenticated by the session cookie that carries neither
  (browsers always send one); on the API (``/api``, ``/metrics``) and the pages, a
  request with neither a right bearer token nor a valid session is refused: 401 on the
  API, a ``303`` to ``/login`` on a page.  Every 403, 401 and 429 is audited through
  :class:`~stoker.admin.audit.RefusalAudit` (rate-limited per client, the token only as
  a fingerprint).  Nothing behind the guard runs for a refused request.
- With a token configured, every bearer token takes a slot of its client's
  :class:`~stoker.admin.login_limit.LoginLimiter` before it is compared (given back when
  it is right): a client past the limit gets 429 with ``Retry-After``, its token unread,
  right or wrong, until its window ends.  A session cookie is no guess (its secret is
  unguessable and looked up by digest): an admin logged in keeps the dashboard while
  another program on the same address is held up.  The client is the one
  ``trusted_proxies`` resolve (:class:`Gate`'s ``client_of``), as in the audit rows.
- ``Authorization: Bearer`` wins over the cookie: an API client is judged by its token.
- A session counts only on the site it was opened on (scheme and ``Host``; the scheme
  through ``trusted`` proxies), in the cookie named for that scheme
  (:meth:`~stoker.admin.sessions.Sessions.find_at`).
- The authenticated actor (``token:<fingerprint>``, ``session:<digest prefix>`` or
  ``anonymous``) is put in ``scope["state"]["actor"]`` for the routes, and the session,
  if any, in ``scope["state"]["session"]``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import urlsplit

from stoker.admin.audit import RefusalAudit
from stoker.admin.auth import (
    AuthDecision,
    authenticate,
    bearer_token,
    host_of,
    is_loopback_host,
)
from stoker.admin.login_limit import LoginLimiter, Refused, retry_seconds
from stoker.admin.sessions import Session, Sessions, place_of
from stoker.asgi import ASGIApp, Message, Receive, Send
from stoker.http.forwarded import TrustedProxies

READS = frozenset({"GET", "HEAD"})
LOGIN: Final = "/login"

CSP: Final = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
              "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
SECURITY_HEADERS: Final = (
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)
_REPLACED: Final = frozenset({b"cache-control", *(name for name, _ in SECURITY_HEADERS)})

Kind = Literal["open", "public", "api", "page"]


def header(scope: Message, name: bytes) -> str | None:
    """The first value of field ``name`` (lower case) in an ASGI scope.  Pure."""
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def no_store(send: Send) -> Send:
    """``send`` with ``Cache-Control: no-store`` and :data:`SECURITY_HEADERS` forced onto
    the response start."""
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", ())
                       if k.lower() not in _REPLACED]
            headers += [(b"cache-control", b"no-store"), *SECURITY_HEADERS]
            message = {**message, "headers": headers}
        await send(message)

    return wrapped


async def _refuse(send: Send, refusal: Refusal) -> None:
    body = (json.dumps({"error": refusal.error}) + "\n").encode()
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode()), *refusal.extra]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def route_path(scope: Message) -> str:
    """The request's path below where the admin side is mounted (``root_path``: an app
    serving it at ``/stoker``), as its routes read it.  Pure."""
    path, root = str(scope.get("path", "")), str(scope.get("root_path", ""))
    if root and (path == root or path.startswith(root + "/")):
        return path[len(root):] or "/"
    return path


async def _to_login(send: Send, root: str = "") -> None:
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", (root + LOGIN).encode()),
                            (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the guard refuses a request."""

    status: int
    error: str
    extra: tuple[tuple[bytes, bytes], ...] = ()


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL, lower case ("" when it has none).  Pure."""
    parts = urlsplit(url.strip())
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else ""


def write_refusal(origin: str | None, referer: str | None, host: str,
                  allowed: Iterable[str], *, by_cookie: bool) -> Refusal | None:
    """The refusal of a write whose page was ``origin`` (else ``referer``'s origin), made
    to the listener addressed as ``host``; ``None`` when it may go on.  Pure."""
    source = origin if origin is not None else (referer if referer is not None else None)
    if source is None:
        if by_cookie:
            return Refusal(403, "a write with the session cookie must carry Origin or Referer")
        return None
    named = origin_of(source)
    if (named and urlsplit(named).netloc == host) or (named and named in allowed):
        return None
    what = "Origin" if origin is not None else "Referer"
    return Refusal(403, f"cross-origin write refused ({what} {source!r}, Host {host!r})")


def check(scope: Message, token: str | None, decision: AuthDecision, *, by_cookie: bool,
          allowed: Iterable[str] = ()) -> Refusal | None:
    """The refusal of a request, in the order of the module invariants, before the auth
    step (401) a page answers differently.  Pure."""
    host = (header(scope, b"host") or "").strip().lower()
    method = str(scope.get("method", "GET")).upper()
    if token is None and not is_loopback_host(host_of(host)):
        return Refusal(403, "the admin API has no admin_token, so it only answers requests "
                            "addressed to a loopback host")
    if method not in READS:
        refusal = write_refusal(header(scope, b"origin"), header(scope, b"referer"), host,
                                allowed, by_cookie=by_cookie)
        if refusal is not None:
            return refusal
    if not decision.allowed:
        return Refusal(401, "missing or wrong admin token (Authorization: Bearer <admin_token>)",
                       ((b"www-authenticate", b'Bearer realm="stoker-admin"'),))
    return None


def kind(path: str) -> Kind:
    """How the guard treats ``path``: ``open`` (probes: headers only), ``public`` (login,
    logout, assets: no auth, writes origin-checked), ``api`` (401) or ``page`` (303 to
    the login page).  Pure."""
    if path in ("/healthz", "/readyz"):
        return "open"
    if path in (LOGIN, "/logout") or path.startswith("/static/"):
        return "public"
    if guarded(path):
        return "api"
    return "page"


def guarded(path: str) -> bool:
    """Whether ``path`` is the API or the metrics (refused with a 401).  Pure."""
    return path in ("/api", "/metrics") or path.startswith("/api/")


def audited_action(method: str, path: str) -> str:
    """The audit ``action`` of a call: ``purge`` or ``METHOD /path``.  Pure."""
    return "purge" if (method, path) == ("POST", "/api/purge") else f"{method} {path}"


def too_many(client: str, refused: Refused) -> Refusal:
    """The 429 of a client past its authentication limit.  Pure."""
    seconds = retry_seconds(refused.wait)
    return Refusal(429, f"too many failed admin authentications from {client}: try again "
                        f"in {seconds} s", ((b"retry-after", str(seconds).encode()),))


@dataclass(frozen=True, slots=True)
class Gate:
    """What the guard and the login form share: the audit of refusals, the limit of failed
    authentications, and who the client of a request is (through ``trusted_proxies``)."""

    refusals: RefusalAudit
    limiter: LoginLimiter
    client_of: Callable[[Message], str]


class AdminGuard:
    """See the module docstring."""

    def __init__(self, app: ASGIApp, *, token: str | None, gate: Gate,
                 sessions: Sessions | None = None, allowed_origins: Iterable[str] = (),
                 trusted: TrustedProxies | None = None) -> None:
        self._app = app
        self._trusted = trusted if trusted is not None else TrustedProxies(())
        self._token = token
        self._gate = gate
        self._refusals = gate.refusals
        self._sessions = sessions
        self._allowed = frozenset(filter(None, map(origin_of, allowed_origins)))

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        send = no_store(send)
        path = route_path(scope)
        treated = kind(path)
        if treated != "open":
            await self._refusals.flush()
            client = self._gate.client_of(scope)
            judged = self._authenticate(scope, client)
            if isinstance(judged, Refused):
                limited = too_many(client, judged)
                await self._audit_refusal(scope, path, client, "anonymous", limited)
                await _refuse(send, limited)
                return
            decision, session = judged
            if treated == "public":
                decision = AuthDecision(True, decision.actor)
            refusal = check(scope, self._token, decision, allowed=self._allowed,
                            by_cookie=session is not None)
            if refusal is not None and refusal.status == 401 and treated == "page":
                await _to_login(send, str(scope.get("root_path", "")))
                return
            if refusal is not None:
                await self._audit_refusal(scope, path, client, decision.actor, refusal)
                await _refuse(send, refusal)
                return
            state = scope.setdefault("state", {})
            state["actor"], state["session"] = decision.actor, session
        await self._app(scope, receive, send)

    def _authenticate(self, scope: Message, client: str
                      ) -> tuple[AuthDecision, Session | None] | Refused:
        """The decision on the request's credential; a token is compared only after it took
        a slot of ``client``'s limit (synchronous: nothing interleaves)."""
        presented = bearer_token(header(scope, b"authorization"))
        if presented is None and self._sessions is not None:
            session = self._sessions.find_at(scope, place_of(scope, self._trusted))
            if session is not None:
                return AuthDecision(True, session.actor), session
        if presented is None or self._token is None:
            return authenticate(self._token, presented), None
        slot = self._gate.limiter.reserve(client)
        if isinstance(slot, Refused):
            return slot
        decision = authenticate(self._token, presented)
        if decision.allowed:
            self._gate.limiter.refund(slot)
        return decision, None

    async def _audit_refusal(self, scope: Message, path: str, client: str, actor: str,
                             refusal: Refusal) -> None:
        method = str(scope.get("method", "GET")).upper()
        await self._refusals.refused(
            client=client, actor=actor,
            action=audited_action(method, path),
            target={"path": path, "status": refusal.status, "error": refusal.error})

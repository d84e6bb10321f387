"""ASGI middleware in front of every admin route: no-store, same-origin writes, auth.

Invariants:
- Every response, errors included, carries ``Cache-Control: no-store``
  (any other ``Cache-Control`` the app set is replaced).
- On ``/api`` routes and ``/metrics`` (:func:`guarded`), in this order: with no token
  configured, a request whose ``Host`` is not a loopback name is refused (403; defeats DNS
  rebinding against the open local API); a write (any method but GET/HEAD)
  carrying an ``Origin`` other than the listener's own ``Host`` is refused
  (403; a web page cannot purge through a browser); a missing or wrong token
  is refused (401).  Every refusal is audited through
  :class:`~stoker.admin.audit.RefusalAudit` (rate-limited per client, the
  token only as a fingerprint).  Nothing behind the guard runs for a refused
  request.
- The authenticated actor is put in ``scope["state"]["actor"]`` for the routes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlsplit

from stoker.admin.audit import RefusalAudit
from stoker.admin.auth import authenticate, bearer_token, host_of, is_loopback_host
from stoker.asgi import ASGIApp, Message, Receive, Send

READS = frozenset({"GET", "HEAD"})


def _header(scope: Message, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def no_store(send: Send) -> Send:
    """``send`` with ``Cache-Control: no-store`` forced onto the response start."""
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", ())
                       if k.lower() != b"cache-control"]
            headers.append((b"cache-control", b"no-store"))
            message = {**message, "headers": headers}
        await send(message)

    return wrapped


async def _refuse(send: Send, refusal: Refusal) -> None:
    body = (json.dumps({"error": refusal.error}) + "\n").encode()
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode()), *refusal.extra]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the guard refuses a request."""

    status: int
    error: str
    extra: tuple[tuple[bytes, bytes], ...] = ()


def check(scope: Message, token: str | None, authenticated: bool) -> Refusal | None:
    """The refusal of an ``/api`` request, in the order of the module invariants.  Pure."""
    host = (_header(scope, b"host") or "").strip().lower()
    method = str(scope.get("method", "GET")).upper()
    if token is None and not is_loopback_host(host_of(host)):
        return Refusal(403, "the admin API has no admin_token, so it only answers requests "
                            "addressed to a loopback host")
    origin = _header(scope, b"origin")
    if method not in READS and origin is not None and (
            urlsplit(origin.strip()).netloc.lower() != host):
        return Refusal(403, f"cross-origin write refused (Origin {origin!r}, Host {host!r})")
    if not authenticated:
        return Refusal(401, "missing or wrong admin token (Authorization: Bearer <admin_token>)",
                       ((b"www-authenticate", b'Bearer realm="stoker-admin"'),))
    return None


def guarded(path: str) -> bool:
    """Whether requests for ``path`` pass the checks: the API and the metrics.  Pure."""
    return path in ("/api", "/metrics") or path.startswith("/api/")


def audited_action(method: str, path: str) -> str:
    """The audit ``action`` of a call: ``purge`` or ``METHOD /path``.  Pure."""
    return "purge" if (method, path) == ("POST", "/api/purge") else f"{method} {path}"


class AdminGuard:
    """See the module docstring."""

    def __init__(self, app: ASGIApp, *, token: str | None, refusals: RefusalAudit) -> None:
        self._app = app
        self._token = token
        self._refusals = refusals

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        send = no_store(send)
        path = str(scope.get("path", ""))
        if guarded(path):
            await self._refusals.flush()
            decision = authenticate(self._token, bearer_token(_header(scope, b"authorization")))
            refusal = check(scope, self._token, decision.allowed)
            if refusal is not None:
                await self._audit_refusal(scope, path, decision.actor, refusal)
                await _refuse(send, refusal)
                return
            scope.setdefault("state", {})["actor"] = decision.actor
        await self._app(scope, receive, send)

    async def _audit_refusal(self, scope: Message, path: str, actor: str,
                             refusal: Refusal) -> None:
        method = str(scope.get("method", "GET")).upper()
        client = scope.get("client")
        await self._refusals.refused(
            client=str(client[0]) if client else "unknown", actor=actor,
            action=audited_action(method, path),
            target={"path": path, "status": refusal.status, "error": refusal.error})

"""ASGI middleware in front of every admin route: no-store, same-origin writes, auth.

Invariants:
- Every response, errors included, carries ``Cache-Control: no-store``
  (any other ``Cache-Control`` the app set is replaced).
- On ``/api`` routes, in this order: with no token configured, a request
  whose ``Host`` is not a loopback name is refused (403; defeats DNS
  rebinding against the open local API); a write (any method but GET/HEAD)
  carrying an ``Origin`` other than the listener's own ``Host`` is refused
  (403; a web page cannot purge through a browser); a missing or wrong token
  is refused (401) and audited.  Nothing behind the guard runs for a refused
  request.
- The authenticated actor is put in ``scope["state"]["actor"]`` for the routes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from stoker.admin.auth import authenticate, bearer_token, host_of, is_loopback_host
from stoker.asgi import Message, Receive, Send
from stoker.proxy.purge import Auditor

log = logging.getLogger("stoker.admin")
ASGIApp = Callable[[Message, Receive, Send], Awaitable[None]]
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


async def _refuse(send: Send, status: int, error: str, extra: tuple[tuple[bytes, bytes], ...] = ()
                  ) -> None:
    body = (json.dumps({"error": error}) + "\n").encode()
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class AdminGuard:
    """See the module docstring."""

    def __init__(self, app: ASGIApp, *, token: str | None, audit: Auditor | None) -> None:
        self._app = app
        self._token = token
        self._audit = audit

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        send = no_store(send)
        path = str(scope.get("path", ""))
        if path == "/api" or path.startswith("/api/"):
            refusal = await self._check(scope)
            if refusal is not None:
                status, error, extra = refusal
                await _refuse(send, status, error, extra)
                return
        await self._app(scope, receive, send)

    async def _check(self, scope: Message
                     ) -> tuple[int, str, tuple[tuple[bytes, bytes], ...]] | None:
        host = (_header(scope, b"host") or "").strip().lower()
        method = str(scope.get("method", "GET")).upper()
        if self._token is None and not is_loopback_host(host_of(host)):
            return 403, ("the admin API has no admin_token, so it only answers requests "
                         "addressed to a loopback host"), ()
        origin = _header(scope, b"origin")
        if method not in READS and origin is not None and (
                urlsplit(origin.strip()).netloc.lower() != host):
            return 403, f"cross-origin write refused (Origin {origin!r}, Host {host!r})", ()
        decision = authenticate(self._token, bearer_token(_header(scope, b"authorization")))
        if not decision.allowed:
            await self._record_denied(decision.actor, method, str(scope.get("path", "")))
            return 401, "missing or wrong admin token (Authorization: Bearer <admin_token>)", (
                (b"www-authenticate", b'Bearer realm="stoker-admin"'),)
        scope.setdefault("state", {})["actor"] = decision.actor
        return None

    async def _record_denied(self, actor: str, method: str, path: str) -> None:
        if self._audit is None:
            return
        action = "purge" if (method, path) == ("POST", "/api/purge") else f"{method} {path}"
        try:
            await self._audit.record(actor=actor, action=action, target={"path": path},
                                     count=None, outcome="denied")
        except Exception:
            log.exception("could not write the audit record of a refused admin call")

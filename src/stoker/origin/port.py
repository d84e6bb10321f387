"""Talking to the origin: the ``OriginClient`` port, what every implementation
(:class:`~stoker.origin.http.HttpOrigin`, :class:`~stoker.origin.asgi.AsgiOrigin`, the
wrappers) keeps to.

Invariants: bodies stream both ways (a request body is written piece by piece as the
connection takes it; a response body is read as the client or the cache consumes it, in
pieces of at most :data:`CHUNK` bytes, the socket left unread while too much waits:
never buffered whole); redirects are never followed and codings never decoded (the
proxy passes the origin's bytes through); connecting, and every wait for the origin's
next bytes, longer than the timeout raise :class:`OriginTimeout`, and so does a request
body that makes no progress into the connection for the timeout, so the timeout bounds
every wait on the origin; every other failure raises :class:`OriginError`
(:class:`OriginConnectionLost` when the connection closed before a response); a
response whose status line or headers do not parse is an :class:`OriginError` saying so
on one line, never retried; interim (1xx) responses are consumed and never surface (a
``101``, which no request asks for, is a malformed response).
The framing sent is this client's alone: whatever ``Content-Length``,
``Transfer-Encoding`` or ``Expect`` the caller's headers carry is dropped, and a
request with a body declares exactly ``body.size`` bytes and sends exactly those (one
without a body declares none, but ``POST``/``PUT``/``PATCH`` say ``Content-Length: 0``,
as RFC 9110 §8.6 asks); no request waits for a ``100 Continue``; no field is added but
a Host when the caller's headers have none.
``OriginResponse.close`` is idempotent and must be called (the pipeline does so in
``finally``); a connection goes back to the pool only when its response was read to the
end with nothing after it and keep-alive holds, otherwise it is closed (an unread body
is not drained); a pooled connection that received bytes while idle is closed, never
reused.  The wire itself: :mod:`~stoker.origin.http_client` (request heads, the pool) and
:mod:`~stoker.origin.http_exchange` (one exchange, on asyncio and httptools' parser).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from stoker.origin.context import RequestContext
from stoker.origin.errors import (
    OriginConnectionLost,
    OriginDown,
    OriginError,
    OriginTimeout,
    error_status,
)

__all__ = [  # the port's errors are its callers' to catch: named here with it
    "FRAMING", "Body", "Headers", "OriginClient", "OriginConnectionLost", "OriginDown",
    "OriginError", "OriginResponse", "OriginTimeout", "error_status", "framed",
]

Headers = list[tuple[bytes, bytes]]


@dataclass(slots=True)
class OriginResponse:
    """An origin response whose headers have arrived and whose body has not been read."""

    status: int
    headers: Headers
    chunks: AsyncIterator[bytes]
    close: Callable[[], Awaitable[None]]


class Body(Protocol):
    """A request body known whole before it is sent (:class:`~stoker.proxy.request_body.
    RequestBody`): its length, and its bytes (each iteration from the start)."""

    size: int

    def chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes."""


class OriginClient(Protocol):
    """Something that can answer a request: a remote origin or a wrapped ASGI app."""

    async def fetch(self, method: str, target: str, headers: Headers, body: Body | None,
                    context: RequestContext | None = None) -> OriginResponse:
        """Send the request (made for the client request ``context`` is of; ``None``: for
        none, as a visitor's); return once response headers are in."""

    async def close(self) -> None:
        """Release connections."""


FRAMING = frozenset({b"content-length", b"transfer-encoding", b"expect"})
"""Request fields an origin client sets itself (or never sends), whatever the caller gives."""


def framed(headers: Sequence[tuple[bytes, bytes]], body: Body | None) -> Headers:
    """``headers`` as an origin gets them: without the caller's framing fields, with
    ``body``'s length when there is a body (every origin client frames through this)."""
    sent = [(name, value) for name, value in headers if name.lower() not in FRAMING]
    if body is not None:
        sent.append((b"content-length", b"%d" % body.size))
    return sent

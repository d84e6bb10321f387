"""Sending responses to the client over ASGI.

Invariants: a :class:`ClientSink` sends exactly one response start; after the
client goes away every further send is a no-op (the caller may keep reading
the origin to finish a store others wait for); a HEAD sink sends headers
only.  Every response start carries this proxy's ``Via`` (RFC 9110 §7.6.3)
and a ``Cache-Status`` (the sink's fallback when the caller gave none).
Error responses from Stoker itself are never cacheable downstream.
"""

from __future__ import annotations

from collections.abc import Sequence

from stoker.asgi import Message, Send

Header = tuple[bytes, bytes]
Headers = list[Header]


class ClientSink:
    """One response to one client."""

    __slots__ = ("_fallback_status", "_head_only", "_send", "_via", "gone", "started")

    def __init__(self, send: Send, *, head_only: bool, via: Header,
                 fallback_status: Header) -> None:
        self._send = send
        self._head_only = head_only
        self._via = via
        self._fallback_status = fallback_status
        self.started = False
        self.gone = False

    async def _emit(self, message: Message) -> None:
        if self.gone:
            return
        try:
            await self._send(message)
        except (OSError, RuntimeError):  # client gone; servers differ in what they raise
            self.gone = True

    async def start(self, status: int, headers: Sequence[tuple[bytes, bytes]]) -> None:
        """Send the status line and headers (plus ``Via``, and ``Cache-Status`` if missing)."""
        self.started = True
        stamped = [*headers, self._via]
        if not any(name == b"cache-status" for name, _ in headers):
            stamped.append(self._fallback_status)
        await self._emit({"type": "http.response.start", "status": status, "headers": stamped})

    async def chunk(self, data: bytes) -> None:
        """Send part of the body (nothing for HEAD)."""
        if data and not self._head_only:
            await self._emit({"type": "http.response.body", "body": data, "more_body": True})

    async def end(self, data: bytes = b"") -> None:
        """Finish the response."""
        body = b"" if self._head_only else data
        await self._emit({"type": "http.response.body", "body": body, "more_body": False})

    async def whole(self, status: int, headers: Sequence[tuple[bytes, bytes]],
                    body: bytes) -> None:
        """Send a complete response in two messages."""
        await self.start(status, headers)
        await self.end(body)


def error_response(status: int, message: str,
                   extra: Sequence[tuple[bytes, bytes]] = ()) -> tuple[Headers, bytes]:
    """Headers and body of an error Stoker itself produces."""
    body = (message.rstrip() + "\n").encode("utf-8")
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *extra,
    ]
    return headers, body

"""Sending responses to the client over ASGI.

Invariants: a :class:`ClientSink` sends exactly one response start; after the
client goes away every further send is a no-op (the caller may keep reading
the origin to finish a store others wait for); a HEAD sink sends headers
only.  Every response start carries this proxy's ``Via`` (RFC 9110 §7.6.3)
and a ``Cache-Status``: the one :meth:`ClientSink.stamp` made for the response's
:class:`~stoker.cache.outcome.Outcome`, which the sink keeps (:attr:`ClientSink.outcome`),
else :data:`~stoker.cache.outcome.GENERATED`'s.
Error responses from Stoker itself are never cacheable downstream.
"""

from __future__ import annotations

from collections.abc import Sequence

from stoker.asgi import Message, Send
from stoker.cache.outcome import GENERATED, Outcome

Header = tuple[bytes, bytes]
Headers = list[Header]


class ClientSink:
    """One response to one client."""

    __slots__ = ("_head_only", "_name", "_send", "_via", "gone", "outcome", "started")

    def __init__(self, send: Send, *, head_only: bool, via: Header, name: str) -> None:
        self._send = send
        self._head_only = head_only
        self._via = via
        self._name = name
        self.started = False
        self.gone = False
        self.outcome: Outcome | None = None
        """What the cache did for this response (set by :meth:`stamp`)."""

    def stamp(self, outcome: Outcome) -> Header:
        """The ``Cache-Status`` field for ``outcome``, now this response's outcome."""
        self.outcome = outcome
        return (b"cache-status", outcome.cache_status(self._name))

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
        if self.outcome is None:
            stamped.append(self.stamp(GENERATED))
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

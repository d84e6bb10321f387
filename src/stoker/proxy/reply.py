"""A :class:`Reply`: what the request core answers, before any transport renders it.

The core (:meth:`~stoker.proxy.pipeline.Pipeline.serve`) writes each response into a
:class:`ReplySink`, which hands it out as one :class:`Reply` — status, headers, body
(bytes, or a :class:`BodyStream` read at the client's pace) and the
:class:`~stoker.cache.outcome.Outcome` — for an adapter to render (as ASGI messages,
:mod:`~stoker.adapters.asgi_reply`).

Invariants: a sink gives exactly one reply; every reply carries this proxy's ``Via``
(RFC 9110 §7.6.3) and a ``Cache-Status``: the one :meth:`ReplySink.stamp` made for its
outcome, else :data:`~stoker.cache.outcome.GENERATED`'s; a reply's ``outcome`` is final
once its body has ended (a response first counted as stored that then fails to store is
corrected); its ``Cache-Status`` never claims more than was known when the head was
sent (``stored`` only for a response stored before its head went out).  Whoever
takes a reply with a streamed body iterates it to its end or closes it (``aclose``): a
body left neither holds its producer until the producer's request is cancelled.  A body
stream that raises has not ended: its response must not be passed off as whole (the
connection is dropped).  Error responses from Stoker itself are never cacheable
downstream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Protocol

from stoker.cache.entry import CacheEntry
from stoker.cache.outcome import GENERATED, Outcome

Header = tuple[bytes, bytes]
Headers = list[Header]


class BodyStream(Protocol):
    """A response body given as it comes (an async generator is one)."""

    def __aiter__(self) -> AsyncIterator[bytes]: ...

    def __anext__(self) -> Awaitable[bytes]: ...

    def aclose(self) -> Awaitable[None]:
        """Nobody reads any more (the client went away, or the request was a HEAD)."""


class Reply:
    """One response, transport-free (see the module invariants)."""

    __slots__ = ("body", "close", "entry", "extra", "headers", "outcome", "status")

    def __init__(self, status: int, headers: Sequence[Header], body: bytes | BodyStream,
                 outcome: Outcome, entry: CacheEntry | None = None,
                 extra: Sequence[Header] = (), close: bool = False) -> None:
        self.status = status
        self.headers = headers
        """The response's fields (a stored entry's own list, when served from one as it is
        stored: renderers may reuse what they made of it)."""
        self.extra = extra
        """The fields this response adds after them: ``Age``, ``Cache-Status``, ``Via``
        (Stoker's own, writable by construction)."""
        self.body = body
        self.outcome = outcome
        """What the cache did (final once the body has ended)."""
        self.entry = entry
        """The cache entry it was served from, if any."""
        self.close = close
        """The request was refused: on HTTP/1, the connection closes after this reply
        (what is left of the request is never read)."""

    def fields(self) -> Headers:
        """Every field as sent: :attr:`headers`, then :attr:`extra`."""
        return [*self.headers, *self.extra]


class ReplySink:
    """Where the core writes one response; :attr:`reply` gives it out."""

    __slots__ = ("_name", "_outcome", "_reply", "_via", "reply", "tally")

    def __init__(self, *, via: Header, name: str) -> None:
        self._via = via
        self._name = name
        self._outcome: Outcome | None = None
        self._reply: Reply | None = None
        self.reply: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        """Resolved when the response's head is known."""
        self.tally: str | None = None
        """What the lookup counted the request as (``hit``, ``stale``, ``miss``, or
        ``bypass`` when it skipped the cache), the last decision standing (a hit found
        unservable and fetched is a miss); ``None``: no lookup (a refusal, a purge)."""

    @property
    def started(self) -> bool:
        """The reply has been given out."""
        return self._reply is not None

    @property
    def given(self) -> Reply | None:
        """The reply given out, if any."""
        return self._reply

    @property
    def entry(self) -> CacheEntry | None:
        """The cache entry the reply given out was served from, if any."""
        return self._reply.entry if self._reply is not None else None

    @property
    def outcome(self) -> Outcome | None:
        """What the cache did for this response (set by :meth:`stamp`)."""
        return self._outcome

    @outcome.setter
    def outcome(self, outcome: Outcome) -> None:
        self._outcome = outcome
        if self._reply is not None:
            self._reply.outcome = outcome

    def stamp(self, outcome: Outcome, *, shown: Outcome | None = None) -> Header:
        """The ``Cache-Status`` field for ``outcome``, now this response's outcome; for
        ``shown`` instead when given: what the header may claim when it goes out before
        ``outcome`` is known true (a streamed miss is not yet stored when its head is
        sent, so its header never says ``stored``)."""
        self.outcome = outcome
        return (b"cache-status", (shown or outcome).cache_status(self._name))

    def whole(self, status: int, headers: Sequence[Header], body: bytes, *,
              entry: CacheEntry | None = None, extra: Sequence[Header] = (),
              close: bool = False) -> None:
        """Give the reply with its whole body (``extra``: fields added after ``headers``,
        before ``Via``)."""
        self._give(status, headers, body, entry, extra, close)

    def stream(self, status: int, headers: Sequence[Header], body: BodyStream, *,
               entry: CacheEntry | None = None, extra: Sequence[Header] = ()) -> None:
        """Give the reply with a body read as it comes."""
        self._give(status, headers, body, entry, extra, False)

    def fail(self, error: BaseException) -> None:
        """The core failed before giving a reply: whoever awaits it gets ``error``."""
        if not self.reply.done():
            self.reply.set_exception(error)

    def _give(self, status: int, headers: Sequence[Header], body: bytes | BodyStream,
              entry: CacheEntry | None, extra: Sequence[Header], close: bool) -> None:
        assert self._reply is None, "a sink gives one reply"
        added = [*extra, self._via]
        if self._outcome is None:
            added.append(self.stamp(GENERATED))
        assert self._outcome is not None
        self._reply = Reply(status, headers, body, self._outcome, entry, extra=added,
                            close=close)
        if not self.reply.done():
            self.reply.set_result(self._reply)


def error_response(status: int, message: str,
                   extra: Sequence[Header] = ()) -> tuple[Headers, bytes]:
    """Headers and body of an error Stoker itself produces."""
    body = (message.rstrip() + "\n").encode("utf-8")
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *extra,
    ]
    return headers, body

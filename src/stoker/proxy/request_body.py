"""A client's request body, read whole before the origin is asked (as nginx does).

A request body that reaches the origin while it is still arriving lets a slow client set
the pace of an origin request, and so hold one of ``origin_max_concurrency``'s slots for as
long as it likes; a body cut short would reach the origin as a complete request.  So the
pipeline reads the whole body first (:func:`read_body`) and only then takes a slot; a
``GET``/``HEAD``'s body, which a cache fetch never forwards, is read and dropped
(:func:`discard_body`).

Invariants:
- The origin is contacted only for a body that arrived whole: a client gone mid-body
  (:class:`BodyBrokenOff`), a wait of more than ``timeout`` seconds on the injected
  clock between two pieces (:class:`BodyTimeout`, ``client_body_timeout``), a body over
  ``limit`` bytes (:class:`BodyTooLarge`, ``client_max_body_size``) or a disk error
  keeping it (:class:`BodyNotKept`) ends the request first, as a :class:`BadRequest`
  whose status the pipeline answers.
- At most :data:`MEMORY` bytes of a body are held in memory; a longer one goes whole to
  an unnamed temporary file in the given directory (:mod:`~stoker.proxy.transit_file`),
  which disappears when the body is closed or the process dies.
- :attr:`RequestBody.size` is exactly the number of bytes :meth:`RequestBody.chunks`
  yields, each time it is iterated (a retried request sends the same bytes again).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from stoker.asgi import Receive
from stoker.clock import Clock
from stoker.proxy.request import BadRequest
from stoker.proxy.transit_file import TransitFile

MEMORY = 64 * 1024
"""Bytes of a body held in memory before the rest is written to a temporary file."""
CHUNK = 64 * 1024
"""Bytes read from the temporary file per piece sent."""


class BodyTimeout(BadRequest):
    """The client sent nothing for ``client_body_timeout`` while its body was due (408)."""

    status = 408


class BodyTooLarge(BadRequest):
    """The body is larger than ``client_max_body_size`` (413)."""

    status = 413


class BodyNotKept(BadRequest):
    """The body could not be written to its temporary file (a disk error, 503)."""

    status = 503


class BodyBrokenOff(BadRequest):
    """The body ended before its end: the client went away, or its framing broke (granian
    reports a malformed chunk as a disconnect).  Answered 400 in case someone is still
    there to read it."""


class RequestBody:
    """A request body read whole: in memory, or in an unnamed temporary file."""

    __slots__ = ("_file", "_memory", "size")

    def __init__(self, memory: list[bytes], file: TransitFile | None, size: int) -> None:
        self._memory = memory
        self._file = file
        self.size = size
        """The body's length in bytes: the ``Content-Length`` the origin is sent."""

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes, from the start (each call begins again)."""
        if self._file is None:
            for piece in self._memory:
                yield piece
            return
        offset = 0
        while offset < self.size:
            piece = await self._file.read_at(offset, min(CHUNK, self.size - offset))
            offset += len(piece)
            yield piece

    def close(self) -> None:
        """Free the memory and remove the temporary file (safe to call twice, and while
        :meth:`chunks` is still being read: its next read fails)."""
        self._memory = []
        if self._file is not None:
            self._file.close()


async def read_body(body: AsyncIterator[bytes], *, timeout: float, limit: int,
                    directory: Path, clock: Clock) -> RequestBody:
    """Read the request body whole (see the module invariants); the caller closes it."""
    memory: list[bytes] = []
    file: TransitFile | None = None
    size = 0
    try:
        async for piece in _pieces(body, timeout, limit, clock):
            if file is None and size + len(piece) > MEMORY:
                file = await TransitFile.create(directory)
                await file.write_at(0, memory)
                memory = []
            if file is None:
                memory.append(piece)
            else:
                await file.write_at(size, (piece,))
            size += len(piece)
    except BaseException as error:
        if file is not None:
            file.close()
        if isinstance(error, OSError):
            raise BodyNotKept("the request body could not be kept for forwarding: "
                              f"{error.strerror or error}") from error
        raise
    return RequestBody(memory, file, size)


async def discard_body(body: AsyncIterator[bytes], *, timeout: float, limit: int,
                       clock: Clock) -> None:
    """Read the request body to its end and drop it (same refusals as :func:`read_body`)."""
    async for _ in _pieces(body, timeout, limit, clock):
        pass


async def _pieces(body: AsyncIterator[bytes], timeout: float, limit: int,
                  clock: Clock) -> AsyncIterator[bytes]:
    """The body's pieces as the server hands them over, to the last; refusals raised."""
    size = 0
    while True:
        try:
            piece = await _next(body, timeout, clock)
        except StopAsyncIteration:
            return
        size += len(piece)
        if size > limit:
            raise BodyTooLarge(f"the request body is larger than {limit} bytes "
                               "(client_max_body_size)")
        yield piece


async def _next(body: AsyncIterator[bytes], timeout: float, clock: Clock) -> bytes:
    """The body's next piece (``StopAsyncIteration`` at its end), raced against
    ``clock.sleep(timeout)``: :class:`BodyTimeout` if the sleep ends first (the read is
    then cancelled, and finished, before it is raised)."""
    piece = asyncio.ensure_future(anext(body))
    timer = asyncio.ensure_future(clock.sleep(timeout))
    try:
        await asyncio.wait((piece, timer), return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
        if not piece.done():
            piece.cancel()
            await asyncio.wait((piece,))
    if piece.cancelled():
        raise BodyTimeout(f"the request body stalled for more than {timeout:g} s "
                          "(client_body_timeout)")
    return piece.result()


async def no_body() -> AsyncIterator[bytes]:
    """The body of a request that has none."""
    nothing: tuple[bytes, ...] = ()
    for piece in nothing:
        yield piece


async def asgi_body(receive: Receive) -> AsyncIterator[bytes]:
    """The pieces of the body an ASGI server hands over through ``receive``, to the last;
    :class:`BodyBrokenOff` if the client goes away before its end."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BodyBrokenOff("the request body ended before its end")
        piece = message.get("body", b"")
        if piece:
            yield bytes(piece)
        if not message.get("more_body", False):
            return

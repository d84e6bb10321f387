"""An origin's response body carried to the client at the client's pace, while the origin
is read at its own (nginx's proxy buffering).

An origin request holds one of ``origin_max_concurrency``'s slots until its body has been
read, so a client that reads slowly (or not at all) must not set the pace of that read:
the body goes into a :class:`ResponseBuffer` — memory up to :data:`MEMORY` bytes, then an
unnamed temporary file up to :data:`FILE_LIMIT` — from which a :class:`ClientFeed`, the
reply's body stream, gives it to whoever sends it to the client; a body declared to fit
in :data:`MEMORY` is simply kept whole and sent once the origin is done
(:class:`WholeBody`).  The origin is done
(and its slot free) when its body has been read, however long the client takes.

Invariants:
- The client gets the bytes in the order the origin sent them, each once, after the
  response head; the head is given out (as the :class:`~stoker.proxy.reply.Reply`) without
  waiting for anyone, so a client not reading cannot stall the reader of the origin
  even there.
- :meth:`ClientFeed.put` waits only while the buffer holds :data:`MEMORY` bytes in memory
  and :data:`FILE_LIMIT` in its file: past that, the origin is read at the client's pace
  (as nginx does past ``proxy_max_temp_file_size``), and so it is after the file failed
  to take a write (logged; the client still gets every byte).
- The response's end is sent only after :meth:`ClientFeed.end`, and with ``hold_last``
  the body's last piece goes with it: a caller that stores the body before ending the
  feed has it stored before the client has all of it (so the client's next request is
  a hit).  Without ``hold_last`` every piece is sent as soon as the client takes it.
- A client gone away is never waited for: the buffer then drops what it is given, and
  :attr:`ClientFeed.gone` tells a caller with nobody else to read for to stop.
- After :meth:`Feed.fail` (the origin broke off) or :meth:`Feed.cancel`, the client's
  response is never ended: its body stream raises, and so does :meth:`Feed.finished`, so
  the server drops the connection (or, nothing sent yet, the pipeline answers 502) and a
  truncated body is never passed off as whole.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from pathlib import Path
from typing import Protocol

from stoker.origin.port import OriginError, OriginResponse
from stoker.proxy.transit_file import TransitFile

log = logging.getLogger("stoker.proxy")

MEMORY = 256 * 1024
"""Bytes of a response held in memory for its client before the rest goes to a file."""
FILE_LIMIT = 1024 * 1024 * 1024
"""Most bytes of a response waiting in a file for its client (nginx's
``proxy_max_temp_file_size`` default)."""
CHUNK = 256 * 1024
"""Bytes read from the file per piece sent."""


class ResponseBuffer:
    """A pipe from one writer (the origin's reader) to one reader (the client's feed).

    Pieces go to memory while the file holds nothing unread and memory has room (or is
    empty), else to the end of the file; the reader takes memory first, then the file,
    so every piece in memory precedes every piece in the file and order is kept.  Once the
    reader has caught up with the file, it is written again from its start.
    """

    def __init__(self, directory: Path, *, memory: int = MEMORY,
                 file_limit: int = FILE_LIMIT) -> None:
        self._directory = directory
        self._memory_limit = memory
        self._file_limit = file_limit
        self._memory: deque[bytes] = deque()
        self._memory_bytes = 0
        self._file: TransitFile | None = None
        self._written = 0
        self._read = 0
        self._ended = False
        self._error: BaseException | None = None
        self._dropping = False
        self._readable = asyncio.Event()
        self._writable = asyncio.Event()

    async def put(self, piece: bytes) -> None:
        """Add ``piece``; waits only while memory and file are both full."""
        while not self._dropping and piece:
            if self._file is not None and self._read == self._written:
                self._read = self._written = 0  # caught up: the file starts over
            if self._written == 0 and (not self._memory or
                                       self._memory_bytes + len(piece) <= self._memory_limit):
                self._memory.append(piece)
                self._memory_bytes += len(piece)
                self._readable.set()
                return
            if self._written + len(piece) <= self._file_limit:
                try:
                    await self._append_to_file(piece)
                    return
                except OSError as error:
                    if not self._dropping:
                        log.warning("a response body could not wait for its client on disk "
                                    "(%s): the rest is read at the client's pace", error)
                        self._file_limit = 0
                    continue
            self._writable.clear()
            await self._writable.wait()

    async def _append_to_file(self, piece: bytes) -> None:
        if self._file is None:
            self._file = await TransitFile.create(self._directory)
        await self._file.write_at(self._written, (piece,))
        self._written += len(piece)
        self._readable.set()

    def end(self, error: BaseException | None = None) -> None:
        """No more pieces; the reader gets ``error`` after the last one, if given (the
        first call decides)."""
        if self._ended:
            return
        self._ended = True
        self._error = error
        self._readable.set()

    async def get(self) -> bytes | None:
        """The next piece, ``None`` after the last; raises the error :meth:`end` gave."""
        while True:
            if self._memory:
                piece = self._memory.popleft()
                self._memory_bytes -= len(piece)
                self._writable.set()
                return piece
            if self._file is not None and self._read < self._written:
                piece = await self._file.read_at(self._read,
                                                 min(CHUNK, self._written - self._read))
                self._read += len(piece)
                self._writable.set()
                return piece
            if self._ended:
                if self._error is not None:
                    raise self._error
                return None
            self._readable.clear()
            await self._readable.wait()

    def drop(self) -> None:
        """Nobody reads any more: forget what is held and drop what comes."""
        self._dropping = True
        self._memory.clear()
        self._memory_bytes = 0
        self._writable.set()
        self.close()

    def close(self) -> None:
        """Remove the file (safe to call twice)."""
        if self._file is not None:
            self._file.close()
            self._file = None
            self._read = self._written = 0


class Feed(Protocol):
    """Where the origin's reader puts a response body for its client."""

    @property
    def gone(self) -> bool:
        """The client went away: what is put is dropped."""

    async def put(self, piece: bytes) -> None:
        """Queue ``piece`` for the client (see the module invariants)."""

    def end(self) -> None:
        """The body is whole: the client's response ends after its last piece."""

    def fail(self, error: BaseException) -> None:
        """The body broke off with ``error``: the client's response is never ended."""

    async def finished(self) -> None:
        """Wait until the client has been sent everything; raise the error of :meth:`fail`."""

    def cancel(self) -> None:
        """Stop now (the caller gave up); nothing more reaches the client."""


def feed_for(directory: Path, *, length: int | None,
             hold_last: bool = False) -> WholeBody | ClientFeed:
    """A :class:`WholeBody` for a body declared to fit in :data:`MEMORY` (most pages: a
    task and a buffer would cost more than they save), else a :class:`ClientFeed`."""
    if sends_whole(length):
        return WholeBody()
    return ClientFeed(directory, hold_last=hold_last)


def sends_whole(length: int | None) -> bool:
    """Whether :func:`feed_for` keeps a body of declared ``length`` whole, so its response
    is sent only once the origin is done (and what the body came to is known before the
    head goes out)."""
    return length is not None and length <= MEMORY


class WholeBody:
    """A :class:`Feed` that keeps the whole body (small: its length is known), sent with
    its head once the origin is done with (:attr:`body`); an origin that broke off is
    raised by :meth:`finished`, with nothing sent (the pipeline answers 502)."""

    gone = False
    """Nobody can go away before a whole body is sent."""

    def __init__(self) -> None:
        self._pieces: list[bytes] = []
        self._error: BaseException | None = None

    async def put(self, piece: bytes) -> None:
        self._pieces.append(piece)

    def end(self) -> None:
        pass

    def fail(self, error: BaseException) -> None:
        self._error = self._error or error

    async def finished(self) -> None:
        if self._error is not None:
            raise self._error

    def cancel(self) -> None:
        self._pieces = []

    @property
    def body(self) -> bytes:
        """What was put, whole."""
        return b"".join(self._pieces)


class ClientFeed:
    """One response body handed to its client from a :class:`ResponseBuffer`: the reply's
    :class:`~stoker.proxy.reply.BodyStream`, read by whoever sends it, at its pace."""

    def __init__(self, directory: Path, *, hold_last: bool = False) -> None:
        self._buffer = ResponseBuffer(directory)
        self._hold_last = hold_last
        self._held = b""  # with hold_last, the latest piece: it goes out once the body ends
        self._done = asyncio.Event()  # the client has had everything, or went away
        self._error: BaseException | None = None
        self.gone = False
        """The client went away (the body stream was closed before its end): what is put
        is dropped."""

    async def put(self, piece: bytes) -> None:
        """Queue ``piece`` for the client (see the module invariants)."""
        await self._buffer.put(piece)

    def end(self) -> None:
        """The body is whole: the client's response ends after its last piece."""
        self._buffer.end()

    def fail(self, error: BaseException) -> None:
        """The body broke off with ``error``: the client's response is left unended."""
        self._buffer.end(error)

    async def finished(self) -> None:
        """Wait until the client has had everything (or went away); raise the error its
        body stream raised."""
        try:
            await self._done.wait()
        finally:
            self._buffer.close()
        if self._error is not None:
            raise self._error

    def cancel(self) -> None:
        """Stop now (the caller gave up): the client's response is never ended."""
        if not self._done.is_set():
            self._error = OriginError("the response was abandoned before its end")
            self._buffer.end(self._error)
            self._buffer.drop()

    def __aiter__(self) -> ClientFeed:
        return self

    async def __anext__(self) -> bytes:
        try:
            while True:
                piece = await self._buffer.get()
                if self._error is not None:  # cancelled: what was dropped must not look whole
                    raise self._error
                if piece is None:
                    piece, self._held = self._held, b""
                    if piece:
                        return piece
                    self._done.set()
                    raise StopAsyncIteration
                if not self._hold_last:
                    return piece
                piece, self._held = self._held, piece
                if piece:
                    return piece
        except OSError as error:  # the file failed a read: the response cannot be whole
            self._stop(OriginError(f"a response body could not be read back from disk: "
                                   f"{error}"))
            raise self._error from error  # type: ignore[misc]
        except OriginError as error:
            self._stop(error)
            raise

    async def aclose(self) -> None:
        """The client went away: drop what is held and what comes."""
        if not self._done.is_set():
            self.gone = True
            self._buffer.drop()
            self._done.set()

    def _stop(self, error: BaseException) -> None:
        self._error = self._error or error
        self._done.set()


async def carry(response: OriginResponse, feed: Feed | None) -> None:
    """Pass ``response``'s body on to ``feed`` (None: nobody waits for it), read at the
    origin's pace; the response is closed (its origin slot free) once its body has ended,
    before anyone waits for the client.  The origin's body stops being read when the
    client has gone; an origin breaking off fails the feed once the client has had what
    came before."""
    try:
        if feed is None:
            return
        try:
            async for piece in response.chunks:
                await feed.put(piece)
                if feed.gone:
                    break
        except OriginError as error:
            feed.fail(error)
        else:
            feed.end()
    finally:
        await response.close()

"""Unnamed temporary files for bodies in transit: a request body read before it is
forwarded, a response body waiting for a slow client.

Invariants: a :class:`TransitFile` has no name from the moment it exists, so it disappears
when closed or when the process dies (nothing is left to sweep); reads and writes are
positional (``pread``/``pwrite``) and run in a thread, so a writer and a reader never share
an offset and the event loop never waits for the disk; :meth:`TransitFile.close` releases
the descriptor only once no read or write is in flight, so a descriptor number is never
reused under an operation still running in a thread.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


class TransitFile:
    """One unnamed temporary file, read and written by offset."""

    __slots__ = ("_busy", "_closing", "_file")

    def __init__(self, file: int) -> None:
        self._file: int | None = file
        self._busy = 0
        self._closing = False

    @classmethod
    async def create(cls, directory: Path) -> TransitFile:
        """A new, empty file in ``directory`` that no name refers to."""
        return cls(await asyncio.to_thread(_unnamed_file, directory))

    async def write_at(self, offset: int, pieces: tuple[bytes, ...] | list[bytes]) -> None:
        """Write every piece, in order, from ``offset`` on."""
        await self._run(_write_all, pieces, offset)

    async def read_at(self, offset: int, size: int) -> bytes:
        """``size`` bytes from ``offset``; an ``OSError`` if the file holds fewer."""
        piece: bytes = await self._run(os.pread, size, offset)
        if len(piece) < size:
            raise OSError(f"a body in transit ended at {offset + len(piece)} bytes, "
                          f"{size - len(piece)} short of what was written")
        return piece

    def close(self) -> None:
        """Remove the file, now or once the operation in flight ends (safe to call twice)."""
        self._closing = True
        if self._busy == 0:
            self._release()

    async def _run(self, call: Callable[..., T], *args: object) -> T:
        """``call(descriptor, *args)`` in a thread; the descriptor stays open until it
        returns, even when the caller is cancelled meanwhile."""
        if self._closing or self._file is None:
            raise OSError("a body in transit was read or written after it was closed")
        self._busy += 1
        work = asyncio.ensure_future(asyncio.to_thread(call, self._file, *args))
        work.add_done_callback(self._settled)
        return await asyncio.shield(work)

    def _settled(self, work: asyncio.Future[T]) -> None:
        if not work.cancelled():
            work.exception()  # retrieved: a caller cancelled meanwhile never awaits it
        self._busy -= 1
        if self._closing and self._busy == 0:
            self._release()

    def _release(self) -> None:
        if self._file is not None:
            os.close(self._file)
            self._file = None


def _unnamed_file(directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    file, name = tempfile.mkstemp(dir=directory, prefix=".transit-")
    os.unlink(name)
    return file


def _write_all(file: int, pieces: tuple[bytes, ...] | list[bytes], offset: int) -> None:
    for piece in pieces:
        view = memoryview(piece)
        while view:
            written = os.pwrite(file, view, offset)
            offset += written
            view = view[written:]

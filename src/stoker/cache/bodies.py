"""Response bodies too large to keep inline live in files in one directory.

Invariants:
- A body is written under a temporary name (``TEMP_PREFIX`` …) and only
  renamed to its final, unique name after the data is flushed and fsynced;
  the directory is fsynced after the rename.  A crash therefore never leaves
  a partial body under a final name; leftovers are temp files, which
  :meth:`BodyStore.sweep_temp` removes at startup.
- A crash between the rename and the row insert (or a put the L2 queue
  dropped) leaves an orphan: a final file nothing references.
  :meth:`BodyStore.sweep_orphans_blocking` removes final files outside the
  owner's references, and temp files, last changed before a cutoff, so a
  body still being written or waiting to be referenced is never swept.
- A spool holds at most ``threshold`` bytes plus one chunk in memory: once
  the total exceeds the threshold everything goes to a temp file and later
  chunks are appended straight to it.
- Names are plain file names inside the directory (never paths), so a name
  read back from storage cannot point outside it.
- Blocking file work runs in ``asyncio.to_thread``; the ``*_blocking``
  helpers exist for callers already on a worker thread (the SQLite store).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncGenerator, Container
from pathlib import Path
from typing import BinaryIO

TEMP_PREFIX = ".tmp-"
FINAL_SUFFIX = ".body"


class BodyStore:
    """A directory of body files.  See the module docstring for invariants."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def spool(self, threshold: int) -> BodySpool:
        """A writer that keeps up to ``threshold`` bytes inline, then spills to a file."""
        return BodySpool(self, threshold)

    def path(self, name: str) -> Path:
        """The file holding body ``name``; rejects anything but a plain file name."""
        if not name or name != Path(name).name or name in {".", ".."}:
            raise ValueError(f"invalid body file name {name!r}: expected a plain file name")
        return self.directory / name

    async def open(self, name: str, chunk_size: int = 65536, *, offset: int = 0,
                   length: int | None = None) -> AsyncGenerator[bytes, None]:
        """Yield the body in chunks: ``length`` bytes from ``offset`` (default: all).

        Only the requested bytes are read (fewer if the file ends first).
        The file is opened on the first iteration: a missing body raises
        ``FileNotFoundError`` before any chunk, so a caller that pulls the
        first chunk before starting its response can treat it as a miss.
        """
        handle = await asyncio.to_thread(self.path(name).open, "rb")
        try:
            if offset:
                await asyncio.to_thread(handle.seek, offset)
            left = length
            while left is None or left > 0:
                size = chunk_size if left is None else min(chunk_size, left)
                chunk = await asyncio.to_thread(handle.read, size)
                if not chunk:
                    break
                if left is not None:
                    left -= len(chunk)
                yield chunk
        finally:
            await asyncio.to_thread(handle.close)

    async def remove(self, name: str) -> None:
        """Delete body ``name``; a missing file is not an error."""
        await asyncio.to_thread(self.remove_blocking, name)

    def remove_blocking(self, name: str) -> None:
        """:meth:`remove` for callers already on a worker thread."""
        self.path(name).unlink(missing_ok=True)

    async def sweep_temp(self) -> int:
        """Remove temp files left by a crash; return how many.  Call at startup only."""
        return await asyncio.to_thread(self._sweep_temp_blocking)

    def _sweep_temp_blocking(self) -> int:
        leftovers = list(self.directory.glob(f"{TEMP_PREFIX}*"))
        for path in leftovers:
            path.unlink(missing_ok=True)
        return len(leftovers)

    def sweep_orphans_blocking(self, referenced: Container[str], older_than: float) -> int:
        """Remove body and temp files not in ``referenced`` whose last change is before
        ``older_than`` (epoch seconds); return how many.  Run it on the thread that owns
        the references so they cannot change meanwhile."""
        removed = 0
        for path in self.directory.iterdir():
            if path.name in referenced or not _is_body_or_temp(path.name):
                continue
            try:
                if path.stat().st_mtime >= older_than:
                    continue
                path.unlink()
            except FileNotFoundError:
                continue
            removed += 1
        return removed

    def new_temp_path(self) -> Path:
        return self.directory / f"{TEMP_PREFIX}{uuid.uuid4().hex}"

    def new_final_name(self) -> str:
        return f"{uuid.uuid4().hex}{FINAL_SUFFIX}"

    def fsync_directory(self) -> None:
        """Make a rename in the directory durable (POSIX)."""
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


WRITE_BATCH = 256 * 1024
"""Bytes a spilled :class:`BodySpool` gathers before one write to its file."""

class BodySpool:
    """Accumulates one body: inline up to the threshold, then in a temp file.

    Use: ``await write(chunk)`` any number of times, then exactly one of
    ``await finish()`` or ``await abort()``.  If ``finish`` raises, the temp
    file has been removed and no final file exists.  After ``write`` raises
    (a disk error: ``OSError``), ``abort`` is the only further call.  ``abort``
    never raises ``OSError``: a temp file it cannot remove is left for
    :meth:`BodyStore.sweep_temp`.  Once spilled, chunks are written to the file in
    batches of :data:`WRITE_BATCH` bytes (one thread hand-off per batch, not per
    chunk), so at most that much of a large body is held in memory.
    """

    def __init__(self, store: BodyStore, threshold: int) -> None:
        self._store = store
        self._threshold = threshold
        self._chunks: list[bytes] = []
        self._pending = 0
        self._size = 0
        self._temp: Path | None = None
        self._file: BinaryIO | None = None
        self._closed = False

    @property
    def size(self) -> int:
        """Bytes written so far."""
        return self._size

    @property
    def inline(self) -> bool:
        """Still held in memory (not spilled to a file): finishing it costs no I/O."""
        return self._file is None

    async def write(self, chunk: bytes) -> None:
        """Append ``chunk``; spills to a temp file once the total exceeds the threshold."""
        if self._closed:
            raise RuntimeError("BodySpool.write called after finish() or abort()")
        if not chunk:
            return
        self._size += len(chunk)
        self._chunks.append(chunk)
        if self._file is not None:
            self._pending += len(chunk)
            if self._pending >= WRITE_BATCH:
                await asyncio.to_thread(self._write_pending)
        elif self._size > self._threshold:
            await asyncio.to_thread(self._spill)

    async def finish(self) -> tuple[bytes | None, str | None, int]:
        """``(inline body, None, size)`` or ``(None, file name, size)``."""
        if self._closed:
            raise RuntimeError("BodySpool.finish called after finish() or abort()")
        self._closed = True
        if self._file is None or self._temp is None:
            body = b"".join(self._chunks)
            self._chunks = []
            return body, None, self._size
        try:
            name = await asyncio.to_thread(self._commit, self._file, self._temp)
        except BaseException:
            await asyncio.to_thread(self._discard)
            raise
        return None, name, self._size

    async def abort(self) -> None:
        """Drop everything written; removes the temp file.  Safe to call twice."""
        if self._closed and self._temp is None:
            return
        self._closed = True
        self._chunks = []
        await asyncio.to_thread(self._discard)

    def _spill(self) -> None:
        self._temp = self._store.new_temp_path()
        self._file = self._temp.open("xb")
        self._write_pending()

    def _write_pending(self) -> None:
        assert self._file is not None
        chunks, self._chunks, self._pending = self._chunks, [], 0
        self._file.writelines(chunks)  # as they are: no joined copy of the batch

    def _commit(self, handle: BinaryIO, temp: Path) -> str:
        self._write_pending()
        handle.flush()
        os.fsync(handle.fileno())
        handle.close()
        name = self._store.new_final_name()
        final = self._store.path(name)
        os.replace(temp, final)
        self._temp = None
        try:
            self._store.fsync_directory()
        except BaseException:
            final.unlink(missing_ok=True)
            raise
        return name

    def _discard(self) -> None:
        file, temp = self._file, self._temp
        self._file = self._temp = None
        with contextlib.suppress(OSError):  # closing flushes, which fails on a full disk
            if file is not None:
                file.close()
        with contextlib.suppress(OSError):
            if temp is not None:
                temp.unlink(missing_ok=True)


def _is_body_or_temp(name: str) -> bool:
    return name.startswith(TEMP_PREFIX) or name.endswith(FINAL_SUFFIX)

"""Storing a body never fails the visitor: disk errors, oversized bodies, slow fsyncs."""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO, TypeVar

import pytest
from tests.integration.conftest import Proxy, running_proxy
from tests.integration.raw_origin import RawRequest, chunked, raw_origin

from stoker.cache.bodies import BodySpool, BodyStore

CHUNKS = [bytes([65 + n]) * 4096 for n in range(8)]
BODY = b"".join(CHUNKS)


async def _cacheable(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    writer.write(chunked("200 OK", {"Cache-Control": "max-age=60"}, CHUNKS))
    return True


class TracedSpool(BodySpool):
    """A real spool that says when it is done (saved, failed or dropped)."""

    def __init__(self, store: BodyStore, threshold: int) -> None:
        super().__init__(store, threshold)
        self.done = asyncio.Event()

    async def finish(self) -> tuple[bytes | None, str | None, int]:
        try:
            return await super().finish()
        finally:
            self.done.set()

    async def abort(self) -> None:
        try:
            await super().abort()
        finally:
            self.done.set()


class DiskFullSpool(TracedSpool):
    """Fails like a full disk once the body has spilled to its temp file."""

    async def write(self, chunk: bytes) -> None:
        await super().write(chunk)
        if self.size > 3 * 4096:
            raise OSError(errno.ENOSPC, "No space left on device")


class FsyncFailsSpool(TracedSpool):
    def _commit(self, handle: BinaryIO, temp: Path) -> str:
        handle.flush()
        raise OSError(errno.EIO, "Input/output error")


class HeldSpool(TracedSpool):
    """Waits for ``release`` before saving, like a slow fsync."""

    def __init__(self, store: BodyStore, threshold: int) -> None:
        super().__init__(store, threshold)
        self.release = asyncio.Event()

    async def finish(self) -> tuple[bytes | None, str | None, int]:
        await self.release.wait()
        return await super().finish()


Spool = TypeVar("Spool", bound=TracedSpool)


def _use_spool(proxy: Proxy, monkeypatch: pytest.MonkeyPatch,
               kind: type[Spool]) -> list[Spool]:
    """Make the proxy spool bodies with ``kind``; returns the spools as they are made."""
    bodies = proxy.stoker.pipeline.bodies
    made: list[Spool] = []

    def spool(threshold: int) -> Spool:
        made.append(kind(bodies, threshold))
        return made[-1]

    monkeypatch.setattr(bodies, "spool", spool)
    return made


@pytest.fixture
async def proxy(tmp_path: Path) -> AsyncIterator[Proxy]:
    async with raw_origin(_cacheable) as origin, \
            running_proxy(origin.url, tmp_path, body_file_threshold=8192) as running:
        yield running


@pytest.mark.parametrize("kind", [DiskFullSpool, FsyncFailsSpool])
async def test_disk_error_while_storing_still_answers_in_full_and_stores_nothing(
        kind: type[TracedSpool], proxy: Proxy, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    spools = _use_spool(proxy, monkeypatch, kind)
    with caplog.at_level(logging.WARNING):
        first = await proxy.client.get("/big")
        await asyncio.wait_for(spools[0].done.wait(), 10)
    assert (first.status_code, first.content) == (200, BODY)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "not storing" in warnings[0] and "disk error" in warnings[0]
    assert list(proxy.stoker.pipeline.bodies.directory.iterdir()) == []  # no temp, no body
    again = await proxy.client.get("/big")
    assert "fwd=" in again.headers["cache-status"] and again.content == BODY


async def test_client_response_ends_before_the_body_is_saved(
        proxy: Proxy, monkeypatch: pytest.MonkeyPatch) -> None:
    spools = _use_spool(proxy, monkeypatch, HeldSpool)
    first = await asyncio.wait_for(proxy.client.get("/big"), 10)  # guards a hang, not speed
    assert (first.status_code, first.content) == (200, BODY)
    assert not spools[0].done.is_set()
    spools[0].release.set()
    await spools[0].done.wait()
    hit = await proxy.client.get("/big")
    assert "hit" in hit.headers["cache-status"] and hit.content == BODY


async def test_body_over_max_object_bytes_streams_whole_and_is_not_stored(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with raw_origin(_cacheable) as origin, \
            running_proxy(origin.url, tmp_path, max_object_bytes=10000) as proxy:
        with caplog.at_level(logging.WARNING):
            first = await proxy.client.get("/big")
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        again = await proxy.client.get("/big")
    assert (first.status_code, first.content) == (200, BODY)
    assert len(warnings) == 1 and "exceeds max_object_bytes" in warnings[0]
    assert "fwd=" in again.headers["cache-status"]
    assert len(origin.requests) == 2

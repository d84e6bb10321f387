"""BodyStore: inline up to a threshold, temp + fsync + rename beyond it, bounded memory."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from stoker.cache.bodies import FINAL_SUFFIX, TEMP_PREFIX, WRITE_BATCH, BodyStore


def names(store: BodyStore) -> list[str]:
    return sorted(path.name for path in store.directory.iterdir())


async def read_all(store: BodyStore, name: str, chunk_size: int = 65536) -> list[bytes]:
    return [chunk async for chunk in store.open(name, chunk_size)]


async def test_a_body_at_the_threshold_stays_inline(bodies: BodyStore) -> None:
    spool = bodies.spool(threshold=10)
    await spool.write(b"12345")
    await spool.write(b"67890")
    assert await spool.finish() == (b"1234567890", None, 10)
    assert names(bodies) == []


async def test_a_body_over_the_threshold_goes_to_a_file(bodies: BodyStore) -> None:
    spool = bodies.spool(threshold=10)
    for chunk in (b"12345", b"67890", b"X", b"tail"):
        await spool.write(chunk)
    body, name, size = await spool.finish()
    assert (body, size) == (None, 15)
    assert name is not None and name.endswith(FINAL_SUFFIX)
    assert names(bodies) == [name]
    assert await read_all(bodies, name, chunk_size=4) == [b"1234", b"5678", b"90Xt", b"ail"]


@pytest.mark.parametrize(
    ("offset", "length", "expected"),
    [
        (0, None, [b"0123", b"4567", b"89"]),
        (3, None, [b"3456", b"789"]),
        (3, 5, [b"3456", b"7"]),
        (0, 1, [b"0"]),
        (9, 100, [b"9"]),  # the file ends first
        (10, 4, []),
        (2, 0, []),
    ],
)
async def test_open_reads_only_the_slice(bodies: BodyStore, offset: int, length: int | None,
                                         expected: list[bytes]) -> None:
    spool = bodies.spool(threshold=0)
    await spool.write(b"0123456789")
    _, name, _ = await spool.finish()
    assert name is not None
    chunks = [chunk async for chunk in bodies.open(name, 4, offset=offset, length=length)]
    assert chunks == expected


async def test_remove_and_missing_file(bodies: BodyStore) -> None:
    spool = bodies.spool(threshold=0)
    await spool.write(b"data")
    _, name, _ = await spool.finish()
    assert name is not None
    await bodies.remove(name)
    await bodies.remove(name)  # removing twice is fine
    with pytest.raises(FileNotFoundError):
        await read_all(bodies, name)


async def test_abort_removes_the_temp_file(bodies: BodyStore) -> None:
    spool = bodies.spool(threshold=2)
    await spool.write(b"abcdef")
    assert [name.startswith(TEMP_PREFIX) for name in names(bodies)] == [True]
    await spool.abort()
    await spool.abort()
    assert names(bodies) == []
    with pytest.raises(RuntimeError):
        await spool.write(b"more")


async def test_a_crash_leaves_only_a_temp_file_which_sweep_removes(bodies: BodyStore) -> None:
    spool = bodies.spool(threshold=2)
    await spool.write(b"partial body")
    # The process dies here: no finish, no abort.
    leftovers = names(bodies)
    assert len(leftovers) == 1 and leftovers[0].startswith(TEMP_PREFIX)
    restarted = BodyStore(bodies.directory)
    assert await restarted.sweep_temp() == 1
    assert names(restarted) == []


async def test_failed_fsync_never_publishes_a_final_name(
    bodies: BodyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_fsync(fd: int) -> None:
        raise OSError("disk on fire")

    spool = bodies.spool(threshold=2)
    await spool.write(b"abcdef")
    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk on fire"):
        await spool.finish()
    assert names(bodies) == []


async def test_failed_directory_fsync_removes_the_renamed_file(
    bodies: BodyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: BodyStore) -> None:
        raise OSError("directory fsync failed")

    spool = bodies.spool(threshold=2)
    await spool.write(b"abcdef")
    monkeypatch.setattr(BodyStore, "fsync_directory", broken)
    with pytest.raises(OSError):
        await spool.finish()
    assert names(bodies) == []


def test_names_cannot_leave_the_directory(bodies: BodyStore) -> None:
    for bad in ("../escape", "a/b", "", ".", "..", "/etc/passwd"):
        with pytest.raises(ValueError):
            bodies.path(bad)


async def test_spooling_100_mb_keeps_memory_bounded(bodies: BodyStore) -> None:
    chunk_size, chunks, threshold = 65536, 1600, 1_000_000
    spool = bodies.spool(threshold)
    tracemalloc.start()
    try:
        for index in range(chunks):
            await spool.write(bytes([index % 256]) * chunk_size)
        _, name, size = await spool.finish()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert size == chunk_size * chunks == 104_857_600
    assert name is not None
    assert Path(bodies.path(name)).stat().st_size == size
    # the inline part, one write batch and its joined copy; the margin covers
    # asyncio/thread bookkeeping.
    bound = threshold + 2 * WRITE_BATCH + 16 * chunk_size
    assert peak < bound, f"peak {peak} bytes while spooling 100 MB"

"""An entry's L2 row (stoker.backends.entry_rows) and the upgrade to it (0006)."""

from __future__ import annotations

import json
import marshal
import sqlite3
import struct
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.entries import make_entry

from stoker.backends.entry_rows import (
    SELECT_LIVE,
    entry_from_row,
    entry_to_row,
    pack,
)
from stoker.backends.migrations import migration_files
from stoker.backends.sqlite import migrations as legacy
from stoker.backends.sqlite.cache_store import COMPONENT, SqliteCacheStore
from stoker.backends.sqlite.connection import MIGRATIONS, apply_migrations, connect
from stoker.cache.bodies import BodyStore
from stoker.cache.entry import CacheEntry
from stoker.clock import FakeClock
from stoker.http.encoding import IDENTITY

TEXT = st.text(max_size=12)
HEADERS = st.lists(st.tuples(st.binary(max_size=20), st.binary(max_size=60)), max_size=8).map(
    tuple)
TIMES = st.floats(allow_nan=False, allow_infinity=False, width=64)
CODINGS = st.lists(st.tuples(st.sampled_from(["br", "gzip", "zstd"]), st.binary(max_size=40)),
                   max_size=3).map(tuple)


@st.composite
def entries(draw: st.DrawFn) -> CacheEntry:
    """Any entry: every field drawn on its own, so a field read into another's place shows."""
    inline = draw(st.booleans())
    return CacheEntry(
        primary_key=draw(TEXT), variant=draw(TEXT), url=draw(TEXT),
        status=draw(st.integers(100, 999)), headers=draw(HEADERS),
        body=draw(st.binary(max_size=50)) if inline else None,
        body_file=None if inline else draw(TEXT), body_size=draw(st.integers(0, 2**40)),
        response_time=draw(TIMES), initial_age=draw(TIMES), fresh_until=draw(TIMES),
        stale_until=draw(TIMES), error_until=draw(TIMES), keep_until=draw(TIMES),
        vary=tuple(draw(st.lists(TEXT, max_size=3))), tags=tuple(draw(st.lists(TEXT, max_size=3))),
        etag=draw(st.none() | TEXT), last_modified=draw(st.none() | TEXT),
        stored_at=draw(TIMES), origin_vouched=draw(st.booleans()), stale_ok=draw(st.booleans()),
        encoded=draw(CODINGS), codings_due=draw(st.booleans()),
    )  # fmt: skip


def selected(entry: CacheEntry) -> tuple[object, ...]:
    """What SELECT_LIVE gives back for the row INSERT_ENTRY writes from ``entry``."""
    with sqlite3.connect(":memory:") as conn:
        conn.execute("CREATE TABLE cache_entries (primary_key, variant, url, record, body, "
                     "body_file, fresh_until, stale_until, error_until, keep_until, stored_at, "
                     "stale_ok, encoded, codings_due, size_bytes)")
        conn.execute("INSERT INTO cache_entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                     "?, ?)", entry_to_row(entry))
        row: tuple[object, ...] = conn.execute(
            SELECT_LIVE.replace("keep_until > ?", "?"), (entry.primary_key, 1)).fetchone()
    return row


def identity_wire(entry: CacheEntry) -> bytes | None:
    """The identity form's head as the fast path gets it."""
    return entry.served(IDENTITY).wire_head()


@given(entries())
def test_every_field_of_every_entry_round_trips(entry: CacheEntry) -> None:
    read = entry_from_row(entry.primary_key, selected(entry))
    assert read == entry
    fresh = replace(entry)  # nothing computed yet
    assert identity_wire(read) == identity_wire(fresh)  # the stored head is the one made anew
    assert read.served(IDENTITY).headers == fresh.served(IDENTITY).headers


@pytest.mark.parametrize("record", [None, b"", b"\x00\x00\x00\x09", pack((200, ())),
                                    b"\xe9" + pack((200,))[1:]])
def test_a_row_whose_record_is_not_an_entry_is_reported_corrupt(record: bytes | None) -> None:
    row = list(selected(make_entry()))
    row[0] = record
    with pytest.raises(ValueError, match="corrupt L2 row for 'k'"):
        entry_from_row("k", row)


# -- the upgrade: rows stored before 0006 ---------------------------------------------------

def legacy_blob(pairs: Iterable[tuple[bytes, bytes]]) -> bytes:
    """The length-prefixed encoding ``headers`` and ``encoded`` had before 0006."""
    items = list(pairs)
    parts = [struct.pack(">I", len(items))]
    for name, value in items:
        parts += (struct.pack(">I", len(name)), name, struct.pack(">I", len(value)), value)
    return b"".join(parts)


@given(HEADERS)
def test_legacy_headers_decode(headers: tuple[tuple[bytes, bytes], ...]) -> None:
    assert legacy.legacy_headers(legacy_blob(headers)) == headers


@given(HEADERS.filter(bool), st.data())
def test_cut_or_padded_legacy_headers_are_refused(
        headers: tuple[tuple[bytes, bytes], ...], data: st.DataObject) -> None:
    blob = legacy_blob(headers)
    cut = data.draw(st.integers(0, len(blob) - 1))
    with pytest.raises((ValueError, struct.error)):
        legacy.legacy_headers(blob[:cut])
    with pytest.raises(ValueError):
        legacy.legacy_headers(blob + b"\x00")


LEGACY_INSERT = """
INSERT INTO cache_entries (
    primary_key, variant, url, status, headers, body, body_file, body_size,
    response_time, initial_age, fresh_until, stale_until, error_until, keep_until,
    vary, tags, etag, last_modified, stored_at, origin_vouched, stale_ok, size_bytes, encoded,
    codings_due
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


def legacy_row(entry: CacheEntry) -> tuple[object, ...]:
    """The row a Stoker before 0006 stored for ``entry``."""
    encoded = legacy_blob((name.encode(), data) for name, data in entry.encoded)
    return (
        entry.primary_key, entry.variant, entry.url, entry.status, legacy_blob(entry.headers),
        entry.body, entry.body_file, entry.body_size, entry.response_time, entry.initial_age,
        entry.fresh_until, entry.stale_until, entry.error_until, entry.keep_until,
        json.dumps(list(entry.vary)), json.dumps(list(entry.tags)), entry.etag,
        entry.last_modified, entry.stored_at, int(entry.origin_vouched), int(entry.stale_ok),
        123, encoded if entry.encoded else None, int(entry.codings_due),
    )  # fmt: skip


async def test_rows_stored_before_0006_read_back_as_they_were_stored(
        tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "cache.sqlite3"
    stored = [
        make_entry("https://example.com/a", tags=("post-1", "home"), vary=("accept-language",),
                   variant="en", headers=((b"x-bytes", b"\x00\xff\r\n"), (b"etag", b'"1"')),
                   etag='"1"', last_modified="Tue, 01 Dec 2026 12:00:00 GMT",
                   origin_vouched=True, encoded=(("br", b"\x00br"), ("gzip", b"\x1f\x8b"))),
        make_entry("https://example.com/b", codings_due=True, stale_ok=False, initial_age=7.5),
        make_entry("https://example.com/c", body=None, body_file="f" * 32, body_size=10**9),
    ]
    garbage = make_entry("https://example.com/garbage")
    conn = connect(path)
    try:
        apply_migrations(conn, COMPONENT, migration_files(MIGRATIONS, COMPONENT)[:5])
        for entry in stored:
            conn.execute(LEGACY_INSERT, legacy_row(entry))
            conn.executemany("INSERT INTO cache_tags VALUES (?, ?, ?)",
                             [(tag, entry.primary_key, entry.variant) for tag in entry.tags])
        bad = list(legacy_row(garbage))
        bad[4] = b"\x00\x00\x00\x09"  # headers cut short
        conn.execute(LEGACY_INSERT, bad)
    finally:
        conn.close()

    store = await SqliteCacheStore.open(path, BodyStore(tmp_path / "bodies"), clock)
    try:
        for entry in stored:
            [read] = await store.get(entry.primary_key)
            assert read == entry
            assert identity_wire(read) == identity_wire(entry)
        assert identity_wire(read) is not None  # (the first entry's headers are not writable)
        with sqlite3.connect(path) as conn:  # the upgrade stored each head with its row
            heads = [marshal.loads(record)[-1] for (record,) in conn.execute(
                "SELECT record FROM cache_entries WHERE record IS NOT NULL ORDER BY url")]
        assert heads == [identity_wire(entry) for entry in stored]
        assert await store.refs_for_tags(["post-1", "home"]) == [
            (stored[0].primary_key, "en")]
        with pytest.raises(ValueError, match="corrupt L2 row"):
            await store.get(garbage.primary_key)
        assert (await store.stats())["entries"] == 4  # the unreadable row is kept, as a miss
    finally:
        await store.close()

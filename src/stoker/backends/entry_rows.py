"""How a :class:`~stoker.cache.entry.CacheEntry` is laid out in a ``cache_entries`` row
(SQLite's tier), and the record the Redis tier keeps of it too.

Every field of an entry that never changes while its row exists is in ONE
column, ``record``: a :mod:`marshal` tuple (:data:`RECORD_FIELDS`), decoded in
C, which also holds the identity form's HTTP/1.1 head
(:meth:`~stoker.cache.entry.CacheEntry.identity_head`), made once when the row
is written instead of on every read.  The fields a statement changes are columns
of their own: the body (``add_codings`` matches it), ``fresh_until``,
``stale_until`` and ``error_until`` (``soften`` lowers them), ``encoded`` and
``codings_due`` (``add_codings`` sets them).  So are, besides the record, the
unchanging fields SQL reads: the key and variant, ``url`` (prefix purges),
``body_file`` (orphan sweeps), ``keep_until`` and ``stored_at`` (liveness,
eviction), ``stale_ok`` (``soften``); plus ``size_bytes``.  An L2 hit reads seven
columns (twenty-three before the record) and decodes no header blob, JSON or
flag in Python, nor writes a head.

Invariants:
- :func:`entry_from_row` (with the primary key the row was looked up by)
  inverts :func:`entry_to_row`: every field of every entry round-trips.
- A field that is both a column and in the record has one value: rows are
  written whole by :func:`entry_to_row`, and no statement changes such a field.
- ``record`` and ``encoded`` are written with :data:`MARSHAL_VERSION`, which
  every later Python reads; :mod:`marshal` loads only plain values (tuples,
  bytes, strings, numbers), and a row that is not such a tuple of the right
  shape raises ``ValueError`` naming the key (a read of it is a miss, see
  :class:`~stoker.cache.tiered.TieredStore`).  The cache database is written by
  Stoker alone: it is no more trusted or untrusted than its body files.
- The stored head is what ``identity_head`` gives for the row's fields: nothing a
  row's updates change (softening, adding the compressed forms) changes it; a
  Stoker that writes heads differently must rewrite it in a migration.
- ``encoded`` is NULL when an entry has no compressed forms; ``size_bytes`` is
  the record's, the body's and the forms' bytes.
"""

from __future__ import annotations

import marshal
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from stoker.cache.entry import CacheEntry
from stoker.http.encoding import Encoded

MARSHAL_VERSION = 4
"""marshal's format since Python 3.4 (read by every later version)."""

RECORD_FIELDS = ("variant", "url", "status", "headers", "body_file", "body_size",
                 "response_time", "initial_age", "keep_until", "vary", "tags", "etag",
                 "last_modified", "stored_at", "origin_vouched", "stale_ok")
"""The entry fields ``record`` holds, in order; then the identity form's HTTP/1.1 head."""

SELECT_LIVE = """
SELECT record, body, fresh_until, stale_until, error_until, encoded, codings_due
FROM cache_entries WHERE primary_key = ? AND keep_until > ? ORDER BY variant
"""
INSERT_ENTRY = """
INSERT INTO cache_entries (
    primary_key, variant, url, record, body, body_file, fresh_until, stale_until, error_until,
    keep_until, stored_at, stale_ok, encoded, codings_due, size_bytes
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


def pack(value: tuple[Any, ...]) -> bytes:
    """``value`` (of plain values only) as ``record`` and ``encoded`` store it."""
    return marshal.dumps(value, MARSHAL_VERSION)


_RECORDED = attrgetter(*RECORD_FIELDS)


def encode_record(entry: CacheEntry) -> bytes:
    """The ``record`` column of ``entry``."""
    return pack((*_RECORDED(entry), entry.identity_head()))


def encode_codings(encoded: Encoded) -> bytes | None:
    """The ``encoded`` column: the compressed forms, NULL when there are none."""
    return pack(encoded) if encoded else None


def entry_to_row(entry: CacheEntry) -> tuple[Any, ...]:
    """Bound parameters of :data:`INSERT_ENTRY` for ``entry``."""
    record = encode_record(entry)
    encoded = encode_codings(entry.encoded)
    return (
        entry.primary_key, entry.variant, entry.url, record, entry.body, entry.body_file,
        entry.fresh_until, entry.stale_until, entry.error_until, entry.keep_until,
        entry.stored_at, int(entry.stale_ok), encoded, int(entry.codings_due),
        len(record) + entry.body_size + len(encoded or b""),
    )  # fmt: skip


def entry_from_row(primary_key: str, row: Sequence[Any]) -> CacheEntry:
    """The entry a :data:`SELECT_LIVE` row of ``primary_key`` holds."""
    record, body, fresh_until, stale_until, error_until, encoded, codings_due = row
    try:
        (variant, url, status, headers, body_file, body_size, response_time, initial_age,
         keep_until, vary, tags, etag, last_modified, stored_at, origin_vouched, stale_ok,
         head) = marshal.loads(record)  # fmt: skip
        codings = marshal.loads(encoded) if encoded is not None else ()
    except (EOFError, TypeError, ValueError) as error:
        raise ValueError(f"corrupt L2 row for {primary_key!r}: {error}") from None
    entry = CacheEntry(  # positionally, in field order: a third faster than by keyword
        primary_key, variant, url, status, headers, body, body_file, body_size, response_time,
        initial_age, fresh_until, stale_until, error_until, keep_until, vary, tags, etag,
        last_modified, stored_at, origin_vouched, stale_ok, codings, codings_due == 1,
    )  # fmt: skip
    entry.know_identity_head(head)
    return entry

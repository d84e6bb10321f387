"""SQLite migrations of every component (``NNNN_component_description.sql``), applied by
``connection.migrate``.

:data:`SQL_FUNCTIONS` are the Python functions the migrations' SQL calls (registered on
the migrating connection): the converters of the columns ``cache`` 0006 folds into ``record``.
Each returns NULL for a value it cannot read, so an upgrade never fails on a bad row.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from typing import Any

from stoker.backends.entry_rows import encode_record, pack
from stoker.cache.entry import CacheEntry

_U32 = struct.Struct(">I")


def legacy_headers(blob: bytes) -> tuple[tuple[bytes, bytes], ...]:
    """Pairs from the length-prefixed encoding of ``headers`` and ``encoded`` before 0006:
    a count, then (length, name, length, value) each, big-endian u32 lengths."""
    unpack = _U32.unpack_from
    (count,) = unpack(blob, 0)
    offset = _U32.size
    pairs = []
    for _ in range(count):
        (size,) = unpack(blob, offset)
        name = blob[offset + _U32.size : offset + _U32.size + size]
        offset += _U32.size + size
        (size,) = unpack(blob, offset)
        offset += _U32.size
        value = blob[offset : offset + size]
        offset += size
        if offset > len(blob):
            raise ValueError("truncated")
        pairs.append((name, value))
    if offset != len(blob):
        raise ValueError("trailing bytes")
    return tuple(pairs)


def entry_record(variant: str, url: str, status: int, headers: bytes, body_file: str | None,
                 body_size: int, response_time: float, initial_age: float, keep_until: float,
                 vary: str, tags: str, etag: str | None, last_modified: str | None,
                 stored_at: float, origin_vouched: int, stale_ok: int, encoded: bytes | None,
                 codings_due: int) -> bytes | None:
    """The ``record`` of a row stored before 0006 (NULL if a column cannot be read): the
    record :func:`~stoker.backends.entry_rows.encode_record` writes for the entry
    those columns hold (the fields it does not record are left at zero)."""
    try:
        entry = CacheEntry(
            primary_key="", variant=variant, url=url, status=status,
            headers=legacy_headers(headers), body=None, body_file=body_file,
            body_size=body_size, response_time=response_time, initial_age=initial_age,
            fresh_until=0.0, stale_until=0.0, error_until=0.0, keep_until=keep_until,
            vary=_strings(vary), tags=_strings(tags), etag=etag, last_modified=last_modified,
            stored_at=stored_at, origin_vouched=bool(origin_vouched), stale_ok=bool(stale_ok),
            codings_due=bool(codings_due) or encoded is not None,  # for the identity head
        )  # fmt: skip
        return encode_record(entry)
    except (TypeError, ValueError, struct.error):
        return None


def entry_codings(encoded: bytes | None) -> bytes | None:
    """The ``encoded`` column of a row stored before 0006 (NULL: none, or unreadable)."""
    if encoded is None:
        return None
    try:
        return pack(tuple((name.decode("ascii"), data) for name, data in legacy_headers(encoded)))
    except (TypeError, ValueError, struct.error):
        return None


def _strings(text: str) -> tuple[str, ...]:
    """A JSON list of strings as a tuple; ``ValueError`` for anything else."""
    items = json.loads(text)
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise ValueError("not a list of strings")
    return tuple(items)


SQL_FUNCTIONS: dict[str, tuple[int, Callable[..., Any]]] = {
    "stoker_entry_record": (18, entry_record),
    "stoker_entry_codings": (1, entry_codings),
}
"""``name: (number of arguments, function)`` for ``sqlite3.Connection.create_function``."""

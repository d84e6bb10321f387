"""Where releases before the PostgreSQL record kept the cache version of the nodes
sharing a Redis tier: the key ``PREFIX version``, ``{"version", "reclaimed"}`` as JSON.

It is no longer written, nor trusted: a Redis restarted empty, evicting it or failing
over to an empty replica loses it, and a node started then ran on version 1 while the
others ran on 2.  The record is in PostgreSQL now
(:mod:`stoker.backends.postgres.version_store`); this key, when it is still there, is
read at start only to raise the record to it (an upgrade keeps its version: the entries
in Redis are under it), never to lower it.

Invariants: no key reads as the initial state; a value that is not a valid version is
an error naming the key (never a silent version 1).
"""

from __future__ import annotations

import json
from typing import Any

from stoker.cache.version_file import VersionState


async def earlier_version(client: Any, prefix: str) -> VersionState:
    """The version an earlier release kept under ``prefix`` (the initial one if none)."""
    key = f"{prefix}version"
    raw = await client.get(key)
    if raw is None:
        return VersionState()
    try:
        data = json.loads(raw)
        version = str(data["version"])
    except (ValueError, KeyError, TypeError):
        version = ""
    if not version.isdigit():
        raise ValueError(f"Redis key {key} holds no valid cache version; delete it "
                         "to start from version 1")
    return VersionState(version, bool(data.get("reclaimed", True)))

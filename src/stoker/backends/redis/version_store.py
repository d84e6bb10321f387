"""The cache version in the Redis the nodes share, as :class:`~stoker.cache.version_file.
VersionFile` keeps it in ``data_dir`` for one machine: every node reads it at start, so a
node that was down during a purge of everything never reads the old version's keys.

Invariants: one key, ``PREFIX version``, holding ``{"version", "reclaimed"}`` as JSON; no
key reads as the initial state; a value that is not a valid version is an error naming
the key (never a silent version 1, which would revive old keys).
"""

from __future__ import annotations

import json
from typing import Any

from stoker.cache.version_file import VersionState


class RedisVersionStore:
    """Reads and writes :class:`VersionState` under ``prefix``."""

    def __init__(self, client: Any, prefix: str) -> None:
        self._client = client
        self.key = f"{prefix}version"

    async def load(self) -> VersionState:
        """The stored state (the initial one before any is stored)."""
        raw = await self._client.get(self.key)
        if raw is None:
            return VersionState()
        try:
            data = json.loads(raw)
            version = str(data["version"])
        except (ValueError, KeyError, TypeError):
            version = ""
        if not version.isdigit():
            raise ValueError(f"Redis key {self.key} holds no valid cache version; delete it "
                             "to start from version 1")
        return VersionState(version, bool(data.get("reclaimed", True)))

    async def save(self, state: VersionState) -> None:
        """Replace the stored state."""
        await self._client.set(self.key, json.dumps({"version": state.version,
                                                     "reclaimed": state.reclaimed}))

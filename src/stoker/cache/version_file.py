"""The persisted cache version (the prefix of every key) in ``data_dir``.

A purge of everything bumps the version: keys of the old version are never
read again and their entries are reclaimed in the background.

Invariants:
- The file is replaced atomically (temp file, fsync, rename, directory
  fsync), so a crash leaves the old or the new state, never a torn one.
- :func:`next_version` is pure and strictly increasing on integers; a
  version is never reused, so a bump can never revive old entries.
- ``reclaimed`` is False from a bump until every entry of older versions
  has been deleted; a restart resumes an unfinished reclaim.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

INITIAL_VERSION = "1"
FILE_NAME = "cache-version.json"


@dataclass(frozen=True, slots=True)
class VersionState:
    """The current cache version and whether older entries are all gone."""

    version: str = INITIAL_VERSION
    reclaimed: bool = True


def next_version(version: str) -> str:
    """The version after ``version`` (integers count up)."""
    if not version.isdigit():
        raise ValueError(f"cache version {version!r} is not a non-negative integer")
    return str(int(version) + 1)


class VersionStore(Protocol):
    """Where the cache version is kept: ``data_dir`` (:class:`VersionFile`), or a store
    the nodes share."""

    async def load(self) -> VersionState:
        """The stored state (the initial one before any is stored)."""

    async def save(self, state: VersionState) -> None:
        """Replace the stored state."""


class VersionFile:
    """Reads and writes :class:`VersionState` at ``directory / FILE_NAME``."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE_NAME

    async def load(self) -> VersionState:
        """The stored state (the initial one when the file does not exist yet)."""
        return await asyncio.to_thread(self._load)

    async def save(self, state: VersionState) -> None:
        """Replace the stored state atomically and durably."""
        await asyncio.to_thread(self._save, state)

    def _load(self) -> VersionState:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return VersionState()
        except (OSError, ValueError) as error:
            raise ValueError(f"cannot read the cache version from {self.path}: {error}; "
                             "delete the file to start from version 1") from None
        version = str(raw.get("version", "")) if isinstance(raw, dict) else ""
        if not version.isdigit():
            raise ValueError(f"{self.path} holds no valid cache version; delete the file to "
                             "start from version 1")
        return VersionState(version, bool(raw.get("reclaimed", True)))

    def _save(self, state: VersionState) -> None:
        temp = self.path.with_name(f".{FILE_NAME}.tmp")
        data = json.dumps({"version": state.version, "reclaimed": state.reclaimed})
        with temp.open("w", encoding="utf-8") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

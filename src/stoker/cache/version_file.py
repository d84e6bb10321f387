"""The cache version (the prefix of every key) and where it is kept: ``data_dir`` on one
machine (:class:`VersionFile`), the record in PostgreSQL for the nodes of one
``database_url`` (``stoker.backends.postgres.version_store``).

A purge of everything bumps the version: keys of the old version are never read again
and their entries are reclaimed in the background.

Invariants:
- Versions only grow.  A :class:`VersionStore` never goes back: :meth:`VersionStore.save`
  of a version older than the stored one changes nothing (:func:`merged`), and
  :meth:`VersionStore.bump` stores a version above both the stored one and the one it is
  given, in one atomic step (:func:`bumped`), so two purges of everything racing on two
  nodes get two versions, and a bump never lands on a version some node already served.
  A version once bumped away from is therefore never current again anywhere.
- :func:`next_version` is pure and strictly increasing on integers; :func:`settle` (what
  a process does about the record) is pure and never moves a process back.
- The file is replaced atomically (temp file, fsync, rename, directory fsync), so a crash
  leaves the old or the new state, never a torn one; its read-change-write holds an
  ``flock`` on ``data_dir`` (the processes of one machine share the file).
- ``reclaimed`` is False from a bump until every entry of older versions has been
  deleted; a restart resumes an unfinished reclaim.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

INITIAL_VERSION = "1"
FILE_NAME = "cache-version.json"


@dataclass(frozen=True, slots=True)
class VersionState:
    """The current cache version and whether older entries are all gone."""

    version: str = INITIAL_VERSION
    reclaimed: bool = True


def next_version(version: str) -> str:
    """The version after ``version`` (integers count up)."""
    return str(version_number(version) + 1)


def newer(version: str, than: str) -> bool:
    """Whether ``version`` comes after ``than``.  Pure."""
    return version_number(version) > version_number(than)


def merged(stored: VersionState, offered: VersionState) -> VersionState:
    """What a store holds once ``offered`` is saved over ``stored``: the newer version
    (an older one changes nothing); the same version takes ``offered``'s ``reclaimed``."""
    return stored if newer(stored.version, offered.version) else offered


def bumped(stored: VersionState, past: str) -> VersionState:
    """What a purge of everything stores: the version after both ``stored``'s and
    ``past`` (the purging process's own), its older entries not reclaimed yet.  Pure."""
    latest = stored.version if newer(stored.version, past) else past
    return VersionState(next_version(latest), reclaimed=False)


def settle(mine: str, record: str) -> Literal["same", "adopt", "raise"]:
    """What a process serving ``mine`` does on reading ``record``: nothing, adopt the
    record's (it missed a bump), or raise the record to its own (the record was lost or
    restored from an older copy; a process never goes back).  Pure."""
    if newer(record, mine):
        return "adopt"
    return "raise" if newer(mine, record) else "same"


def version_number(version: str) -> int:
    """``version`` as the integer it is (a ``ValueError`` naming it otherwise)."""
    if not version.isdigit():
        raise ValueError(f"cache version {version!r} is not a non-negative integer")
    return int(version)


class VersionStore(Protocol):
    """Where the cache version is kept (see the module invariants: it never goes back)."""

    async def load(self) -> VersionState:
        """The stored state (the initial one before any is stored)."""

    async def save(self, state: VersionState) -> None:
        """Store :func:`merged` of the stored state and ``state``."""

    async def bump(self, past: str) -> VersionState:
        """Store :func:`bumped` of the stored state and ``past`` in one atomic step; it."""


class VersionFile:
    """Keeps :class:`VersionState` at ``directory / FILE_NAME``."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE_NAME

    async def load(self) -> VersionState:
        """The stored state (the initial one when the file does not exist yet)."""
        return await asyncio.to_thread(self._load)

    async def save(self, state: VersionState) -> None:
        """Store :func:`merged` of the stored state and ``state``, atomically and durably."""
        await asyncio.to_thread(self._change, lambda stored: merged(stored, state))

    async def bump(self, past: str) -> VersionState:
        """Store :func:`bumped` of the stored state and ``past``; it."""
        return await asyncio.to_thread(self._change, lambda stored: bumped(stored, past))

    def _change(self, change: Callable[[VersionState], VersionState]) -> VersionState:
        with self._locked():
            stored = self._load()
            state = change(stored)
            if state != stored:
                self._save(state)
            return state

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive ``flock`` on the directory, against the other processes."""
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            fcntl.flock(directory, fcntl.LOCK_EX)
            yield
        finally:
            os.close(directory)  # releases the lock

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

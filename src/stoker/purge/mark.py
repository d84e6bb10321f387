"""A purge mark, and the one rule for how marks judge an entry (:func:`judge`).

Invariants: :func:`judge` is pure: the verdict depends only on the marks and the entry.
A hard mark wins over soft ones; a soft verdict carries the earliest purge time, so the
copy is stale from the first purge that covered it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from stoker.cache.entry import CacheEntry


@dataclass(frozen=True, slots=True)
class PurgeMark:
    """One recorded purge."""

    seq: int
    at: float  # monotonic, for trimming
    now: float  # wall clock of the purge: a soft purge makes entries stale from here
    soft: bool
    keys: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()
    tags: frozenset[str] = frozenset()
    everything: bool = False

    def covers(self, entry: CacheEntry) -> bool:
        """True when this purge applies to ``entry``."""
        return (self.everything or entry.primary_key in self.keys
                or any(entry.url.startswith(prefix) for prefix in self.prefixes)
                or not self.tags.isdisjoint(entry.tags))


@dataclass(frozen=True, slots=True)
class Verdict:
    """A purge covered the entry: drop it (``hard``) or keep it stale from ``stale_from``."""

    hard: bool
    stale_from: float


def judge(marks: Iterable[PurgeMark], since: int, entry: CacheEntry) -> Verdict | None:
    """How purges recorded after ``since`` affect ``entry`` (None: not at all)."""
    stale_from: float | None = None
    for mark in marks:
        if mark.seq <= since or not mark.covers(entry):
            continue
        if not mark.soft:
            return Verdict(hard=True, stale_from=mark.now)
        stale_from = mark.now if stale_from is None else min(stale_from, mark.now)
    return None if stale_from is None else Verdict(hard=False, stale_from=stale_from)


def screen(entries: list[CacheEntry], marks: Sequence[PurgeMark]) -> list[CacheEntry]:
    """``entries`` as readers must see them under ``marks``: covered ones dropped (hard)
    or made stale (soft); ``entries`` itself when no mark is given."""
    if not marks:
        return entries
    screened = []
    for entry in entries:
        verdict = judge(marks, 0, entry)
        if verdict is None:
            screened.append(entry)
        elif not verdict.hard:
            screened.append(entry.softened(verdict.stale_from))
    return screened

"""The purge ledger: recent purges, so a fetch that raced one does not store stale data.

A fetch notes :attr:`PurgeLedger.seq` before it sends the origin request;
before storing it asks :meth:`PurgeLedger.check` whether a purge recorded
since then covers the entry.  A purger records *before* it looks entries up
and removes them, so every write is caught by one side or the other: a write
that lands before the record is found and removed by the purge; a write
checked after the record is refused (hard) or stored softened (soft).

Invariants:
- ``seq`` only grows; marks are kept for ``window`` seconds of the injected
  clock's monotonic time.  A fetch that started before the oldest forgotten
  mark is treated as hard-invalidated (safe: it is fetched again later).
- :func:`judge` is pure: the verdict depends only on the marks and the entry.
- A hard mark wins over soft ones; a soft verdict carries the earliest purge
  time, so the stored copy is stale from the first purge that covered it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from stoker.cache.entry import CacheEntry
from stoker.clock import Clock

DEFAULT_WINDOW = 600.0


@dataclass(frozen=True, slots=True)
class PurgeMark:
    """One recorded purge."""

    seq: int
    at: float  # monotonic, for forgetting
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
    """A purge covered the entry: drop it (``hard``) or store it stale from ``stale_from``."""

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


class PurgeLedger:
    """Recent purges, newest last.  See the module docstring for invariants."""

    def __init__(self, clock: Clock, window: float = DEFAULT_WINDOW) -> None:
        self._clock = clock
        self._window = window
        self._marks: deque[PurgeMark] = deque()
        self._seq = 0
        self._forgotten = 0  # seq of the newest mark dropped from the window

    @property
    def seq(self) -> int:
        """The sequence number of the latest purge (0 before any)."""
        return self._seq

    def record(self, *, soft: bool, now: float, keys: Iterable[str] = (),
               prefixes: Iterable[str] = (), tags: Iterable[str] = (),
               everything: bool = False) -> int:
        """Note a purge about to be applied; return its sequence number."""
        self._seq += 1
        at = self._clock.monotonic()
        self._marks.append(PurgeMark(self._seq, at, now, soft, frozenset(keys),
                                     tuple(prefixes), frozenset(tags), everything))
        self._forget(at)
        return self._seq

    @property
    def latest(self) -> PurgeMark:
        """The mark of the latest purge (call only after :meth:`record`)."""
        return self._marks[-1]

    def check(self, since: int, entry: CacheEntry) -> Verdict | None:
        """The verdict for ``entry`` fetched by a request that started at ``since``."""
        if since == self._seq:
            return None
        self._forget(self._clock.monotonic())
        if since < self._forgotten:
            return Verdict(hard=True, stale_from=0.0)
        return judge(self._marks, since, entry)

    def __len__(self) -> int:
        return len(self._marks)

    def _forget(self, now: float) -> None:
        while self._marks and now - self._marks[0].at > self._window:
            self._forgotten = self._marks.popleft().seq

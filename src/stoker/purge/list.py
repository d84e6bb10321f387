"""The purge list: recent purges as one ordered list of marks, and the one rule for them.

A purge appends a mark (a sequence number, its times, its scope: primary keys, URL
prefixes, tags or everything; hard or soft) *before* it looks entries up and changes
them, and everything that asks "does a recent purge cover this entry?" asks the list,
through :func:`judge`:

- a fetch notes :attr:`PurgeList.seq` before it sends the origin request and, before
  storing, asks :meth:`PurgeList.check` about the marks appended since.  Every write is
  caught by one side or the other: one that lands before the mark is found and changed
  by the purge; one checked after it is refused (hard) or stored softened (soft).  The
  L2 write queue asks again right before each write (a put queued while L2 was down may
  be written long after the fetch);
- a tier the purge is still being applied to (:meth:`PurgeList.begin` until
  :meth:`PurgeList.applied`) has what is read from it screened (:func:`screen`) with the
  marks :meth:`PurgeList.unapplied` to it: nothing a mark covers is read back unpurged
  while its application runs;
- what is read from L2 is also judged by every mark recorded after it was stored, for as
  long as such an entry can be read (:attr:`PurgeList.bans`,
  :mod:`stoker.purge.bans`; :meth:`PurgeList.screen_l2` does both): L2's indexes
  may lose what a purge's lookup needs (Redis evicting a tag set), the bans do not.

The marks are kept behind :class:`PurgeLog` (append, marks since a sequence number,
trim): this process's memory now (:class:`MemoryPurgeLog`); a store shared by several
nodes could keep them later, assigning the numbers itself.  A reader judges an entry by
every mark newer than the sequence it last saw, so a node that has not seen mark N never
passes an entry N covers.  Which tier still applies which mark is this process's own
state, kept beside the log.

Invariants:
- ``seq`` only grows; the log holds the marks ``floor + 1 .. seq``, in order.
- A mark is trimmed from the log once no tier is applying it and it is ``window``
  seconds old (the injected clock's monotonic time).  A fetch (or queued write) that
  noted a sequence below the floor is treated as hard-invalidated (safe: it is fetched
  again later).  Trimming the log does not touch the bans: every recorded mark (this
  process's own, and those its relay put in force) is in force for L2 reads as the
  bans' invariants say.
- :func:`judge` (:mod:`stoker.purge.mark`) is pure: the verdict depends only on
  the marks and the entry.  A hard mark wins over soft ones; a soft verdict carries the
  earliest purge time, so the copy is stale from the first purge that covered it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from stoker.cache.entry import CacheEntry
from stoker.clock import Clock
from stoker.purge.bans import PurgeBans, screened
from stoker.purge.mark import PurgeMark, Verdict, judge, screen

__all__ = ["DEFAULT_WINDOW", "L1", "L2", "MemoryPurgeLog", "PurgeList", "PurgeLog",
           "PurgeMark", "Verdict", "judge", "screen"]

DEFAULT_WINDOW = 600.0
"""Seconds a mark applied everywhere is kept for fetches that began before it."""
L1 = "l1"
L2 = "l2"
"""The tiers a mark is applied to (:meth:`PurgeList.begin`)."""


class PurgeLog(Protocol):
    """Where the marks are kept, oldest first."""

    @property
    def seq(self) -> int:
        """The latest mark's sequence number (0 before any)."""

    @property
    def floor(self) -> int:
        """The newest trimmed mark's sequence number (0 before any)."""

    def append(self, mark: PurgeMark) -> PurgeMark:
        """Keep ``mark`` as the newest, numbered ``seq + 1`` (its own ``seq`` is ignored);
        return it so numbered."""

    def since(self, seq: int) -> Sequence[PurgeMark]:
        """The marks numbered above ``seq``, oldest first (all kept when ``seq`` is below
        the floor)."""

    def trim(self, seq: int) -> None:
        """Forget the marks numbered ``seq`` and below."""


class MemoryPurgeLog:
    """A :class:`PurgeLog` in this process's memory."""

    def __init__(self) -> None:
        self._marks: list[PurgeMark] = []
        self._floor = 0

    @property
    def seq(self) -> int:
        return self._floor + len(self._marks)

    @property
    def floor(self) -> int:
        return self._floor

    def append(self, mark: PurgeMark) -> PurgeMark:
        numbered = dataclasses.replace(mark, seq=self.seq + 1)
        self._marks.append(numbered)
        return numbered

    def since(self, seq: int) -> Sequence[PurgeMark]:
        return self._marks[max(0, seq - self._floor):]

    def trim(self, seq: int) -> None:
        drop = min(max(0, seq - self._floor), len(self._marks))
        del self._marks[:drop]
        self._floor += drop


class PurgeList:
    """Recent purges, newest last.  See the module docstring for invariants."""

    def __init__(self, clock: Clock, window: float = DEFAULT_WINDOW,
                 log: PurgeLog | None = None) -> None:
        self._clock = clock
        self._window = window
        self._log: PurgeLog = log if log is not None else MemoryPurgeLog()
        self._applying: dict[str, dict[int, PurgeMark]] = {L1: {}, L2: {}}
        self.bans = PurgeBans()
        """Every mark recorded, in force for L2 reads by store time (see
        :meth:`screen_l2`)."""

    @property
    def seq(self) -> int:
        """The sequence number of the latest purge (0 before any)."""
        return self._log.seq

    @property
    def latest(self) -> PurgeMark:
        """The mark of the latest purge (call only after :meth:`record`)."""
        return self._log.since(self._log.seq - 1)[-1]

    def __len__(self) -> int:
        return self._log.seq - self._log.floor

    def record(self, *, soft: bool, now: float, keys: Iterable[str] = (),
               prefixes: Iterable[str] = (), tags: Iterable[str] = (),
               everything: bool = False) -> int:
        """Note a purge about to be applied; return its sequence number."""
        mark = self._log.append(PurgeMark(0, self._clock.monotonic(), now, soft,
                                          frozenset(keys), tuple(prefixes), frozenset(tags),
                                          everything))
        self.bans.add(mark)
        self._trim()
        return mark.seq

    def check(self, since: int, entry: CacheEntry) -> Verdict | None:
        """The verdict for ``entry`` fetched by a request that started at ``since``."""
        if since == self._log.seq:
            return None
        self._trim()
        if since < self._log.floor:
            return Verdict(hard=True, stale_from=0.0)
        return judge(self._log.since(since), since, entry)

    def begin(self, mark: PurgeMark, tiers: Iterable[str]) -> None:
        """``mark`` is being applied to ``tiers``: reads from them are screened with it
        (:meth:`unapplied`) and it is kept until :meth:`applied` for each."""
        for tier in tiers:
            self._applying[tier][mark.seq] = mark

    def applied(self, mark: PurgeMark, tier: str) -> None:
        """``mark`` has been applied to ``tier`` (or given up with it)."""
        self._applying[tier].pop(mark.seq, None)
        self._trim()

    def in_force(self, tier: str) -> Mapping[int, PurgeMark]:
        """The marks being applied to ``tier`` by sequence number, oldest first: a live
        view (it changes as marks begin and are applied), for the tier's own reads."""
        return self._applying[tier]

    def unapplied(self, tier: str) -> list[PurgeMark]:
        """The marks still being applied to ``tier``, oldest first."""
        return sorted(self._applying[tier].values(), key=_seq) if self._applying[tier] else []

    def screen_l2(self, entries: list[CacheEntry],
                  unapplied: Sequence[PurgeMark]) -> list[CacheEntry]:
        """``entries`` read from L2 as readers must see them: judged by the ``unapplied``
        marks (every entry they cover) and by the :attr:`bans` (those stored at or
        before a mark); ``entries`` itself when neither has a mark."""
        if not self.bans:
            return screen(entries, unapplied)
        bans = self.bans
        verdicts = [_worse(judge(unapplied, 0, entry), bans.verdict(entry))
                    for entry in entries] if unapplied else list(map(bans.verdict, entries))
        return screened(entries, verdicts) if any(verdicts) else entries

    def _trim(self) -> None:
        """Forget the oldest marks no tier applies that are ``window`` seconds old."""
        now = self._clock.monotonic()
        applying = [seq for marks in self._applying.values() for seq in marks]
        keep = min(applying, default=self._log.seq + 1)
        upto = self._log.floor
        for mark in self._log.since(upto):
            if mark.seq >= keep or now - mark.at <= self._window:
                break
            upto = mark.seq
        if upto > self._log.floor:
            self._log.trim(upto)


def _seq(mark: PurgeMark) -> int:
    return mark.seq


def _worse(one: Verdict | None, other: Verdict | None) -> Verdict | None:
    """The verdict of both: hard wins; of two soft ones, the earlier time."""
    if one is None or other is None:
        return one or other
    if one.hard or other.hard:
        return one if one.hard else other
    return one if one.stale_from <= other.stale_from else other

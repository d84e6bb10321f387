"""The purge marks in force for what is read from L2: a ban list judged by store time.

A purge's L2 part finds what it covers through L2's indexes (a Redis tag set, a URL
range) and deletes or softens it.  An index can lose members its entries still have
(Redis evicting a ``t:<tag>`` set under ``allkeys-lru``), so the lookup alone cannot
promise that nothing older than the purge is read again.  The bans can: every mark this
process records (its own purges, and those its relay put in force) is kept here, and an
entry read from L2 is judged by the marks recorded *after it was stored*:

    a mark M judges entry E  iff  M covers E  and  E.stored_at <= M.now

(``stored_at`` and ``M.now`` are wall-clock times: the storing node's and the purging
node's; nodes are assumed to keep their clocks in step, NTP-close).  An entry stored
after the mark was checked against it by whoever stored it (the fetch's check, and the
L2 write queue's right before the write), so it is not judged again.  The verdict is
:func:`~stoker.purge.list.judge`'s: any hard mark drops the entry; soft ones make
it stale from a purge time at or after its store time.

Kept by scope item, not by mark: the latest hard and the latest soft purge time of each
primary key, tag and URL prefix, and of "everything" (the *floor*).  An entry read costs
one comparison when it was stored after every mark (the usual case, and always with no
mark at all), else a dict lookup for its key and each of its tags and a ``startswith``
per kept prefix.

Invariants:
- A mark stays in force (its items' times are only ever raised) until nothing stored
  before it can be read: items are forgotten only by folding (below), which replaces
  them by a floor at least as late, so every entry a forgotten mark judged is judged by
  the floor.  With no fold, marks stay for the process's life: a lifetime bound on L2's
  entries does not exist (an origin may say a year).
- Bounded: at most :data:`MOST_ITEMS` keys and tags and :data:`MOST_PREFIXES` prefixes.
  Past a bound the older half of that kind (by purge time) is folded into the floor:
  the floor's hard time becomes the latest folded hard time, its soft time the latest
  folded soft time.  Folding only widens what is judged (an entry stored before a
  folded item's time is then purged whatever its scope: hard when a hard one was
  folded, else made stale), never narrows it; its price is one miss (or revalidation)
  of what L2 held from before the floor.
- :meth:`PurgeBans.verdict` is pure given the items: it depends on the entry's key,
  URL, tags and ``stored_at`` only.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from math import inf

from stoker.cache.entry import CacheEntry
from stoker.purge.mark import PurgeMark, Verdict

MOST_ITEMS = 100_000
"""Most primary keys and tags kept (about 10 MB) before the older half is folded."""
MOST_PREFIXES = 256
"""Most URL prefixes kept (each costs every judged read a ``startswith``)."""

Times = tuple[float, float]
"""The latest ``(hard, soft)`` purge times of one item (``-inf``: none)."""
NONE: Times = (-inf, -inf)


class PurgeBans:
    """The marks in force for L2 reads.  See the module docstring for invariants."""

    def __init__(self, most_items: int = MOST_ITEMS, most_prefixes: int = MOST_PREFIXES) -> None:
        self._most_items = most_items
        self._most_prefixes = most_prefixes
        self._keys: dict[str, Times] = {}
        self._tags: dict[str, Times] = {}
        self._prefixes: dict[str, Times] = {}
        self._floor: Times = NONE
        self.newest = -inf
        """The latest purge time kept: an entry stored after it is judged by nothing."""

    def __bool__(self) -> bool:
        return self.newest > -inf

    def __len__(self) -> int:
        """Items kept (keys, tags, prefixes), the floor not counted."""
        return len(self._keys) + len(self._tags) + len(self._prefixes)

    def add(self, mark: PurgeMark) -> None:
        """Put ``mark`` in force (for entries stored at or before ``mark.now``)."""
        for items, names in ((self._keys, mark.keys), (self._tags, mark.tags),
                             (self._prefixes, mark.prefixes)):
            for name in names:
                items[name] = _later(items.get(name, NONE), mark)
        if mark.everything:
            self._floor = _later(self._floor, mark)
        self.newest = max(self.newest, mark.now)
        if len(self._keys) + len(self._tags) > self._most_items:
            self._fold(self._keys, self._tags)
        if len(self._prefixes) > self._most_prefixes:
            self._fold(self._prefixes)

    def verdict(self, entry: CacheEntry) -> Verdict | None:
        """How the marks in force judge ``entry`` (None: not at all)."""
        stored = entry.stored_at
        if stored > self.newest:
            return None
        found = [self._floor, self._keys.get(entry.primary_key, NONE)]
        found.extend(self._tags.get(tag, NONE) for tag in entry.tags)
        if self._prefixes:
            url = entry.url
            found.extend(times for prefix, times in self._prefixes.items()
                         if url.startswith(prefix))
        hard = max(times[0] for times in found)
        if hard >= stored:
            return Verdict(hard=True, stale_from=hard)
        soft = [times[1] for times in found if times[1] >= stored]
        return Verdict(hard=False, stale_from=min(soft)) if soft else None

    def _fold(self, *kinds: dict[str, Times]) -> None:
        """Fold the older half of the items of ``kinds`` (by their latest time) into the
        floor."""
        items = [(max(times), kind, name) for kind in kinds for name, times in kind.items()]
        hard, soft = self._floor
        for _, kind, name in heapq.nsmallest(len(items) // 2 + 1, items,
                                             key=lambda item: item[0]):
            item_hard, item_soft = kind.pop(name)
            hard, soft = max(hard, item_hard), max(soft, item_soft)
        self._floor = (hard, soft)


def _later(times: Times, mark: PurgeMark) -> Times:
    hard, soft = times
    return (max(hard, mark.now), soft) if not mark.soft else (hard, max(soft, mark.now))


def screened(entries: list[CacheEntry], verdicts: Iterable[Verdict | None]) -> list[CacheEntry]:
    """``entries`` with their ``verdicts`` carried out: dropped (hard), made stale (soft)
    or kept as they are (None)."""
    out = []
    for entry, verdict in zip(entries, verdicts, strict=True):
        if verdict is None:
            out.append(entry)
        elif not verdict.hard:
            out.append(entry.softened(verdict.stale_from))
    return out

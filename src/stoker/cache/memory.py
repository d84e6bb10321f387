"""L1: the per-process, byte-bounded, in-memory cache tier.

Invariants:
- The total ``meta_size()`` of stored entries never exceeds ``max_bytes``
  once a call returns; an entry larger than ``max_bytes`` is not stored (and
  the entry it would have replaced is dropped, so L1 never serves an older
  version than the one last written).
- Recency is tracked per primary key: eviction removes the least recently
  used primary key with all its variants.  Within a key, ``get_nowait``
  lists variants least recently stored or touched first.
- The tag index is exact (tag → refs) and always mirrors the stored entries.
- Entries past ``keep_until`` (per the injected clock) are absent for every
  operation: never returned, never counted; they are dropped lazily.
- This tier never deletes body files (the persistent tier owns them), and it
  never mutates a stored entry in place (soften stores a copy); callers must
  not mutate entries they get back either.
- The ``*_nowait`` methods are synchronous so the hot path (and
  :class:`~stoker.cache.tiered.TieredStore`) can use them without awaiting;
  the async :class:`~stoker.cache.store.CacheStore` methods delegate to them.
- Purges are the purge list's marks (:mod:`stoker.purge.list`), as a ban list:
  a mark begun for this tier (:meth:`~stoker.purge.list.PurgeList.begin`) and not
  yet applied to it is *in force*.  Every operation that reads, counts, changes or lists
  an entry by its key first judges the key's entries by the marks in force newer than
  the key was last checked against (:meth:`MemoryStore._settled`; usually none, so a
  hit pays one comparison), so no entry a mark covers is ever returned unpurged.  The
  purge applier visits the covered keys with :meth:`MemoryStore.settle_nowait` (a
  C-speed snapshot from ``covered_nowait`` or ``primary_keys_nowait``, in steps) and
  then tells the list the mark is applied.  An entry put after a mark was begun is not
  judged by it (whoever stores it has checked it against the list).  ``stats_nowait``
  alone counts entries a mark in force will delete.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence

from stoker.cache.entry import ENTRY_COST, CacheEntry
from stoker.cache.store import EntryRef, as_refs, sorted_refs
from stoker.clock import Clock
from stoker.http.encoding import Encoded
from stoker.purge.list import L1, PurgeList, PurgeMark, judge

Pair = tuple[str, str]
"""``(primary_key, variant)`` as the tag index holds it: a plain tuple, which the garbage
collector stops tracking once it has seen it (an :class:`EntryRef`, a tuple subclass, it
tracks for life), so 10,000 tagged entries cost every full collection 10,000 objects
less."""


class _Slot:
    """All variants stored under one primary key.

    ``entries`` (returned as is by ``get_nowait``) and ``expires`` (the earliest
    ``keep_until``) are rebuilt on every change, never mutated, so a hit costs
    no allocation and a list handed out stays a stable snapshot (a slot emptied
    by ``pop`` is dropped by its store, so it is not rebuilt).  ``checked`` is the
    newest purge mark its entries have been judged by (or were stored after).
    """

    __slots__ = ("checked", "entries", "expires", "sizes", "variants")

    def __init__(self, checked: int) -> None:
        self.variants: dict[str, CacheEntry] = {}
        self.sizes: dict[str, int] = {}
        self.entries: list[CacheEntry] = []
        self.expires = 0.0
        self.checked = checked

    def set(self, entry: CacheEntry, size: int) -> None:
        self.variants[entry.variant] = entry
        self.sizes[entry.variant] = size
        self._rebuild()

    def touch(self, variant: str) -> None:
        """Mark ``variant`` most recently used (``entries`` is ordered LRU first)."""
        entry = self.variants.pop(variant)
        self.variants[variant] = entry
        self._rebuild()

    def pop(self, variant: str) -> tuple[CacheEntry, int]:
        entry, size = self.variants.pop(variant), self.sizes.pop(variant)
        if self.variants:
            self._rebuild()
        return entry, size

    def _rebuild(self) -> None:
        entries = self.entries = list(self.variants.values())
        if len(entries) == 1:  # most keys: spares min() its generator
            self.expires = entries[0].keep_until
        else:
            self.expires = min((entry.keep_until for entry in entries), default=0.0)


class MemoryStore:
    """A byte-bounded LRU cache tier.  See the module docstring for invariants."""

    def __init__(self, max_bytes: int, clock: Clock, purges: PurgeList | None = None) -> None:
        """``purges`` is the purge list whose marks this tier obeys (one of its own by
        default)."""
        self._max_bytes = max_bytes
        self._clock = clock
        self._slots: OrderedDict[str, _Slot] = OrderedDict()
        self._tags: dict[str, set[Pair]] = {}
        self._bytes = 0
        self._count = 0
        self.purges = purges if purges is not None else PurgeList(clock)
        self._in_force = self.purges.in_force(L1)
        self._changed: dict[int, list[Pair]] = {}
        self.evictions = 0
        """Primary keys evicted to stay within ``max_bytes`` since the store was made."""

    # -- hot path -----------------------------------------------------------

    def get_nowait(self, primary_key: str) -> list[CacheEntry] | None:
        """Live variants of ``primary_key`` (None when absent); marks it recently used.

        The list is shared: callers must not mutate it.
        """
        slot = self._slots.get(primary_key)
        if slot is not None and self._in_force:
            slot = self._settled(primary_key)
        if slot is None:
            return None
        now = self._clock.now()
        if now >= slot.expires:
            self._drop_expired(primary_key, slot, now)
            if primary_key not in self._slots:
                return None
        self._slots.move_to_end(primary_key)
        return slot.entries

    def put_nowait(self, entry: CacheEntry) -> None:
        """Insert or replace ``entry``, then evict least recently used keys to fit."""
        if self._max_bytes < ENTRY_COST:  # no entry fits (an L1 of 0 bytes), none is held
            return
        self._remove(entry.primary_key, entry.variant)
        size = entry.meta_size()
        if size > self._max_bytes:
            return
        slot = self._settled(entry.primary_key) if self._in_force else (
            self._slots.get(entry.primary_key))
        if slot is None:
            slot = self._slots[entry.primary_key] = _Slot(self._newest_in_force())
        else:
            self._slots.move_to_end(entry.primary_key)
        slot.set(entry, size)
        self._bytes += size
        self._count += 1
        self._index_tags(entry, add=True)
        self._shrink()

    def add_codings_nowait(self, entry: CacheEntry, encoded: Encoded) -> bool:
        """As :meth:`~stoker.cache.store.CacheStore.add_codings` (a put: the key becomes
        most recently used); whether the entry got them."""
        slot = self._settled(entry.primary_key)
        current = slot.variants.get(entry.variant) if slot is not None else None
        if current is None or not current.codings_due or not current.same_version(entry) or (
                self._clock.now() >= current.keep_until):
            return False
        self.put_nowait(current.with_codings(encoded))
        return True

    def touch_nowait(self, primary_key: str, variant: str) -> None:
        """Mark one variant of a multi-variant key most recently used."""
        slot = self._settled(primary_key)
        if slot is not None and variant in slot.variants and (
                next(reversed(slot.variants)) != variant):
            slot.touch(variant)

    # -- synchronous invalidation -------------------------------------------

    def delete_nowait(self, refs: Iterable[EntryRef]) -> int:
        """Delete these entries; return how many live ones existed."""
        now = self._clock.now()
        removed = [self._remove(ref.primary_key, ref.variant) for ref in refs]
        return _count_live(removed, now)

    def delete_primary_nowait(self, keys: Iterable[str]) -> int:
        """Delete every variant of these primary keys; return how many live ones existed."""
        now = self._clock.now()
        removed: list[CacheEntry | None] = []
        for key in keys:
            slot = self._settled(key)
            if slot is not None:
                removed.extend(self._remove(key, variant) for variant in list(slot.variants))
        return _count_live(removed, now)

    def soften_nowait(self, refs: Iterable[EntryRef], now: float) -> int:
        """Make these entries stale at ``now`` keeping their stale windows; count changes."""
        return sum(_soften(slot, entry, now) for _, slot, entry in self._live(refs))

    def settle_nowait(self, primary_keys: Iterable[str]) -> None:
        """Judge these keys' entries by the marks in force (as every read does first)."""
        for key in primary_keys:
            self._settled(key)

    def take_changed(self, seq: int) -> list[Pair]:
        """The live entries mark ``seq`` has deleted or made stale here (forgotten once
        taken: call when the mark is applied)."""
        return self._changed.pop(seq, [])

    def covered_nowait(self, tags: Sequence[str], keys: Iterable[str]) -> set[Pair]:
        """The entries carrying any of ``tags`` or stored under any of ``keys``, expired
        ones included (a new set, made at C speed for tags)."""
        found = self._tagged(tags)
        for key in keys:
            slot = self._slots.get(key)
            if slot is not None:
                found.update((key, variant) for variant in slot.variants)
        return found

    def clear_nowait(self) -> None:
        """Forget every entry (a process that may have missed purges starts over)."""
        self._slots.clear()
        self._tags.clear()
        self._bytes = self._count = 0

    def delete_except_version_nowait(self, version: str) -> int:
        """Delete entries whose primary key is not under ``f"{version}|"``."""
        prefix = f"{version}|"
        return self.delete_primary_nowait(
            [key for key in self._slots if not key.startswith(prefix)]
        )

    # -- synchronous lookups -------------------------------------------------

    def refs_for_tags_nowait(self, tags: Sequence[str]) -> set[EntryRef]:
        """Live entries carrying any of ``tags`` (exact match)."""
        return {ref for ref in as_refs(self._tagged(tags)) if self._is_live(ref)}

    def refs_for_url_prefix_nowait(self, prefix: str) -> set[EntryRef]:
        """Live entries whose ``url`` starts with ``prefix`` (a scan)."""
        now = self._clock.now()
        slots = filter(None, map(self._settled, list(self._slots)))
        return {
            EntryRef(entry.primary_key, entry.variant)
            for slot in slots
            for entry in slot.variants.values()
            if entry.url.startswith(prefix) and now < entry.keep_until
        }

    def primary_keys_nowait(self) -> list[str]:
        """A snapshot of the stored primary keys (for scans done in steps)."""
        return list(self._slots)

    def stats_nowait(self) -> dict[str, int]:
        """Stored entries and accounted bytes (expired entries not yet dropped included)."""
        return {"entries": self._count, "bytes": self._bytes, "max_bytes": self._max_bytes}

    # -- CacheStore ----------------------------------------------------------

    async def get(self, primary_key: str) -> list[CacheEntry]:
        return self.read_now(primary_key)

    def read_now(self, primary_key: str) -> list[CacheEntry]:
        return self.get_nowait(primary_key) or []

    async def put(self, entry: CacheEntry) -> None:
        self.put_nowait(entry)

    async def put_many(self, entries: Sequence[CacheEntry]) -> None:
        for entry in entries:
            self.put_nowait(entry)

    async def add_codings(self, entry: CacheEntry, encoded: Encoded) -> None:
        self.add_codings_nowait(entry, encoded)

    async def delete(self, refs: Iterable[EntryRef]) -> int:
        return self.delete_nowait(refs)

    async def delete_primary(self, primary_keys: Iterable[str]) -> int:
        return self.delete_primary_nowait(primary_keys)

    async def refs_for_tags(self, tags: Sequence[str]) -> list[EntryRef]:
        return sorted_refs(self.refs_for_tags_nowait(tags))

    async def refs_for_url_prefix(self, prefix: str) -> list[EntryRef]:
        return sorted_refs(self.refs_for_url_prefix_nowait(prefix))

    async def soften(self, refs: Iterable[EntryRef], now: float) -> int:
        return self.soften_nowait(refs, now)

    async def delete_except_version(self, version: str) -> int:
        return self.delete_except_version_nowait(version)

    async def stats(self) -> dict[str, int]:
        return self.stats_nowait()

    async def count(self) -> int:
        return self._count

    async def close(self) -> None:
        """Nothing to release: memory goes with the process."""

    # -- internals -----------------------------------------------------------

    def _live(self, refs: Iterable[EntryRef]) -> Iterator[tuple[EntryRef, _Slot, CacheEntry]]:
        """The live entries among ``refs``, each looked up when its turn comes."""
        now = self._clock.now()
        for ref in refs:
            slot = self._settled(ref.primary_key)
            entry = slot.variants.get(ref.variant) if slot is not None else None
            if slot is not None and entry is not None and now < entry.keep_until:
                yield ref, slot, entry

    def _remove(self, primary_key: str, variant: str,
                ref: EntryRef | None = None) -> CacheEntry | None:
        """Remove one entry and its accounting; return it (None when absent).  ``ref``, when
        the caller has one, spares building another for the tag index."""
        slot = self._slots.get(primary_key)
        if slot is None or variant not in slot.variants:
            return None
        entry, size = slot.pop(variant)
        self._bytes -= size
        self._count -= 1
        if not slot.variants:
            del self._slots[primary_key]
        self._index_tags(entry, add=False, ref=ref)
        return entry

    def _settled(self, primary_key: str) -> _Slot | None:
        """``primary_key``'s slot once its live entries are judged by the marks in force
        it was not checked against (``None`` if that leaves it empty, or it had none)."""
        slot = self._slots.get(primary_key)
        if slot is None or not self._in_force:
            return slot
        marks = [mark for seq, mark in self._in_force.items() if seq > slot.checked]
        if not marks:
            return slot
        slot.checked = max(mark.seq for mark in marks)
        now = self._clock.now()
        for entry in list(slot.variants.values()):
            if now < entry.keep_until:
                self._obey(slot, entry, marks, now)
        return self._slots.get(primary_key)

    def _obey(self, slot: _Slot, entry: CacheEntry, marks: list[PurgeMark],
              now: float) -> None:
        """Delete ``entry`` or make it stale as ``marks`` say, counting it for each."""
        verdict = judge(marks, 0, entry)
        if verdict is None:
            return
        for mark in marks:
            if mark.covers(entry):
                self._changed.setdefault(mark.seq, []).append(
                    (entry.primary_key, entry.variant))
        if verdict.hard:
            self._remove(entry.primary_key, entry.variant)
        else:
            _soften(slot, entry, verdict.stale_from)

    def _newest_in_force(self) -> int:
        """The newest mark in force (0 when none): what a slot made now is checked by."""
        return max(self._in_force, default=0)

    def _drop_expired(self, primary_key: str, slot: _Slot, now: float) -> None:
        for variant, entry in list(slot.variants.items()):
            if entry.keep_until <= now:
                self._remove(primary_key, variant)

    def _shrink(self) -> None:
        """Evict least recently used primary keys (all variants) until within bounds."""
        while self._bytes > self._max_bytes and self._slots:
            key = next(iter(self._slots))
            self.delete_primary_nowait((key,))
            self.evictions += 1

    def _tagged(self, tags: Sequence[str]) -> set[Pair]:
        found: set[Pair] = set()
        for tag in tags:
            found.update(self._tags.get(tag, ()))
        return found

    def _index_tags(self, entry: CacheEntry, *, add: bool, ref: Pair | None = None) -> None:
        if not entry.tags:
            return
        ref = ref or (entry.primary_key, entry.variant)
        for tag in entry.tags:
            if add:
                self._tags.setdefault(tag, set()).add(ref)
                continue
            refs = self._tags.get(tag)
            if refs is not None:
                refs.discard(ref)
                if not refs:
                    del self._tags[tag]

    def _is_live(self, ref: EntryRef) -> bool:
        slot = self._settled(ref.primary_key)
        entry = slot.variants.get(ref.variant) if slot is not None else None
        return entry is not None and self._clock.now() < entry.keep_until


def _soften(slot: _Slot, entry: CacheEntry, now: float) -> bool:
    """Store ``entry`` in ``slot`` made stale at ``now``; False when it already was."""
    if entry.fresh_until <= now:
        return False
    slot.set(entry.softened(now), slot.sizes[entry.variant])
    return True


def _count_live(removed: Iterable[CacheEntry | None], now: float) -> int:
    return sum(1 for entry in removed if entry is not None and now < entry.keep_until)


"""The purge applier: carries a recorded purge mark out in both tiers, in slices.

A mark is in force for both tiers from :meth:`PurgeApplier.apply` on (it begins it in
the purge list before anything waits): L1 judges the keys it reads by the marks in force
(:mod:`stoker.cache.memory`), L2 reads are screened by them (:mod:`stoker.cache.tiered`).
The applier then removes or softens what the mark covers, so the list can forget it:

- L1: the covered keys are visited with ``settle_nowait`` in event-loop steps.  For
  tags and URLs the covered entries are a C-speed snapshot taken at once and the visits
  run in the background (``settle_budget`` seconds a step, then ``settle_pause`` for
  requests); for URL prefixes and everything every key is visited in steps of
  ``step_budget`` before ``apply`` returns, since only that walk finds them.
- L2: one operation on the L2 write queue looks the covered entries up (``apply``
  returns once it has), then, once L1's walk is done or handed to the background,
  changes :data:`L2_CHUNK` entries per call, resting after each as :func:`l2_pause`
  says.  When L2 is not answering (the queue's last attempt failed, the lookup fails,
  or it times out) ``apply`` does not wait: it returns L1's count and keys with
  ``l2_pending``, and the operation stays queued and is carried out once L2 answers.
  Meanwhile the mark, unapplied to L2, screens every L2 read.

Invariants:
- Each tier tells the purge list when it is done with the mark (applied or given up),
  whatever happens; the list trims marks no tier applies any more.
- No O(entries) step on the event loop: L1 work is chunked by :class:`Steps`, L2 work
  runs on L2's thread a chunk per call.
- The count :meth:`PurgeApplier.apply` returns is the larger of the tiers' counts of
  live entries the mark covered (for tags and URLs, L1's snapshot, expired entries not
  yet dropped included); L1's alone with ``l2_pending``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

from stoker.cache.l2_queue import L2WriteQueue, L2WriteTimeout
from stoker.cache.memory import MemoryStore
from stoker.cache.port import Purged
from stoker.cache.steps import Steps
from stoker.cache.store import PRIMARY_KEY, CacheStore, EntryRef, sorted_refs
from stoker.clock import Clock
from stoker.purge.list import L1, L2, PurgeList, PurgeMark

T = TypeVar("T")

SETTLE_BUDGET = 0.0005
"""Seconds of event-loop time one background step of an L1 purge may use."""
SETTLE_PAUSE = 0.002
"""Seconds a background L1 purge leaves the loop to requests after each of its steps."""
L1_CHUNK = 50
"""L1 keys visited between two looks at the clock; a step takes as many chunks as fit its
time budget (:mod:`stoker.cache.steps`)."""
L2_CHUNK = 100
"""L2 entries changed per L2 call of a purge or reclaim (request-path reads run between)."""


class PurgeApplier:
    """Applies purge marks to L1 and L2.  See the module docstring for invariants."""

    def __init__(self, l1: MemoryStore, l2: CacheStore, queue: L2WriteQueue, clock: Clock,
                 *, steps: Steps, background: Steps,
                 after_soft_step: Callable[[], None] | None = None) -> None:
        """``steps`` paces the walks ``apply`` waits for, ``background`` the L1 visits it
        does not; ``after_soft_step`` runs after each L1 step of a soft purge (which copies
        the entries it makes stale)."""
        self._l1 = l1
        self._l2 = l2
        self._queue = queue
        self._clock = clock
        self._steps = steps
        self._background = background
        self._after_soft_step = after_soft_step
        self._running: set[asyncio.Task[None]] = set()

    @property
    def purges(self) -> PurgeList:
        return self._l1.purges

    async def apply(self, mark: PurgeMark) -> Purged:
        """Put ``mark`` in force for both tiers and apply it; return once L1's walk (URL
        prefixes, everything) is done or its visits started, and L2's covered entries
        are looked up."""
        found: asyncio.Future[list[EntryRef] | None] = (
            asyncio.get_running_loop().create_future())
        l1_done = asyncio.Event()
        self._queue.queue_awaited("purge", partial(self._apply_l2, mark, l1_done, found),
                                  frozenset(), found,
                                  left=partial(self.purges.applied, mark, L2))
        self.purges.begin(mark, (L1, L2))  # before any await: in force for every read
        try:
            if mark.prefixes or mark.everything:
                in_l1, l1_keys = await self._walk_l1(mark)
            else:
                in_l1, l1_keys = self._visit_l1(mark)
        finally:
            l1_done.set()
        in_l2 = await self._looked_up(found)
        if in_l2 is None:
            return Purged(in_l1, sorted(l1_keys), l2_pending=True)
        keys = list(dict.fromkeys(map(PRIMARY_KEY, in_l2)))  # sorted, as in_l2 is
        only_l1 = l1_keys.difference(keys)  # dropped puts
        if only_l1:
            keys = sorted(keys + list(only_l1))
        return Purged(max(in_l1, len(in_l2)), keys)

    async def _looked_up(self, found: asyncio.Future[list[EntryRef] | None],
                         ) -> list[EntryRef] | None:
        """L2's lookup of the covered entries; None, at once, when L2 is not answering (the
        queue's last attempt failed, this lookup failed, or it timed out)."""
        if self._queue.failing and not found.done():
            found.add_done_callback(_retrieved)  # answered (or failed) later: nobody waits
            return None
        try:
            return await found
        except L2WriteTimeout:
            return None

    async def flush(self) -> None:
        """Wait for the background L1 visits started so far."""
        if self._running:
            await asyncio.gather(*self._running)

    async def close(self) -> None:
        """Stop the background L1 visits (their marks stay in force for L1's reads)."""
        for task in self._running:
            task.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)

    # -- L1 ----------------------------------------------------------------------

    async def _walk_l1(self, mark: PurgeMark) -> tuple[int, set[str]]:
        """Visit every L1 key in steps; return the live entries ``mark`` changed and their
        primary keys.  Done (or given up) with L1, the purge list hears of it."""
        try:
            keys = self._l1.primary_keys_nowait()
            async for chunk in self._steps.chunks(keys, L1_CHUNK, self._soft_step(mark)):
                self._l1.settle_nowait(chunk)
        finally:
            changed = self._l1.take_changed(mark.seq)
            self.purges.applied(mark, L1)
        return len(changed), {key for key, _ in changed}

    def _visit_l1(self, mark: PurgeMark) -> tuple[int, set[str]]:
        """Start visiting the L1 keys ``mark`` (tags and URLs only) covers in the
        background; return the entries it covers (expired ones not yet dropped included)
        and their primary keys."""
        refs = self._l1.covered_nowait(sorted(mark.tags), sorted(mark.keys))
        keys = {key for key, _ in refs}
        task = asyncio.get_running_loop().create_task(self._settle(mark, sorted(keys)))
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return len(refs), keys

    async def _settle(self, mark: PurgeMark, keys: Sequence[str]) -> None:
        try:
            async for chunk in self._background.chunks(keys, L1_CHUNK, self._soft_step(mark)):
                self._l1.settle_nowait(chunk)
        finally:
            self._l1.take_changed(mark.seq)
            self.purges.applied(mark, L1)

    def _soft_step(self, mark: PurgeMark) -> Callable[[], None] | None:
        return self._after_soft_step if mark.soft else None

    # -- L2 ----------------------------------------------------------------------

    async def _apply_l2(self, mark: PurgeMark, l1_done: asyncio.Event,
                        found: asyncio.Future[list[EntryRef] | None]) -> None:
        """The queued L2 part of :meth:`apply`: look up (answering ``found``; None when the
        lookup fails), then, once L1's walk is done or handed to the background (so the
        event loop's walk and the L2 thread do not contend for the GIL), change
        :data:`L2_CHUNK` entries per call, resting after each as :func:`l2_pause` says (a
        retry after a failure looks up again)."""
        try:
            refs = await self._l2_refs(mark)
        except Exception:
            if not found.done():
                found.set_result(None)
            raise
        if not found.done():
            found.set_result(refs)
        await l1_done.wait()
        for chunk in chunks(refs, L2_CHUNK):
            started = self._clock.monotonic()
            if mark.soft:
                await self._l2.soften(chunk, mark.now)
            else:
                await self._l2.delete(chunk)
            waiting = self._queue.pending() - 1  # flush barriers hold nothing back
            await asyncio.sleep(l2_pause(self._clock.monotonic() - started, waiting))

    async def _l2_refs(self, mark: PurgeMark) -> list[EntryRef]:
        found = [await self._l2.refs_for_tags(sorted(mark.tags))] if mark.tags else []
        for prefix in ("",) if mark.everything else mark.prefixes:
            found.append(await self._l2.refs_for_url_prefix(prefix))
        for key in sorted(mark.keys):
            found.append([EntryRef(entry.primary_key, entry.variant)
                          for entry in await self._l2.get(key)])
        return _union(found)


def _retrieved(found: asyncio.Future[list[EntryRef] | None]) -> None:
    """Take a lookup's outcome nobody awaits (a timeout would be logged as unretrieved)."""
    if not found.cancelled():
        found.exception()


def chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    """``items`` in slices of ``size``."""
    return [items[start:start + size] for start in range(0, len(items), size)]


def l2_pause(took: float, waiting: int) -> float:
    """Seconds a purge's L2 part rests after a chunk that took ``took`` seconds, with
    ``waiting`` operations queued behind it: as long as the chunk took (L2's thread then
    uses at most half the CPU the hits share with it), or none when operations wait, so
    writes queued behind a purge are not held back longer."""
    return 0.0 if waiting else max(took, 0.0)


def _union(found: list[list[EntryRef]]) -> list[EntryRef]:
    """The distinct refs of ``found``, sorted (a lone non-empty list as is: each tier's
    lookups give distinct refs, and L2's sorted)."""
    lists = [refs for refs in found if refs]
    if len(lists) == 1:
        return lists[0]
    return sorted_refs({ref for refs in lists for ref in refs})

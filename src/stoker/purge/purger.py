"""The Purger: executing purges (and unsafe methods' invalidations) against the tiered
store and the request core's keys.

URLs become primary keys through the request core's own key function (its
:class:`~stoker.proxy.keying.Keying`, given to both: rules' ``ignore_query``, the current
version), so a URL purge removes exactly what a request for that URL would read — every
Vary variant of it.  Prefixes and
tags go through the store's indexes; everything bumps the cache version.

Invariants:
- Every purge is recorded in the :class:`~stoker.purge.list.PurgeList`
  (the one the store and the fetcher share) *before* entries are looked up and
  changed, so a fetch racing the purge either lands first (and is purged) or is
  refused/softened by the list.
- A purge changes L1 (in steps) and looks L2 up before returning; L2's
  deletes (hard) or ``fresh_until = now`` updates (soft, keeping every stale
  window) finish in the background, and until they do every L2 read applies
  the purge's mark (:meth:`~stoker.cache.port.Cache.purge`):
  nothing hard-purged is served, nothing soft-purged is served fresh.  An L2 that
  does not answer is not waited for: the answer counts L1's entries and says
  ``l2_pending``; L2's part is queued, and the mark screens L2's reads meanwhile.
- A purge is relayed to the processes sharing the cache side by side with its
  application here, once it is in force here (its mark begun for every read), never
  after L2's lookup: a purge taken while L2 (Redis) is down reaches the others as one
  taken while the bus (PostgreSQL) is down does (kept and relayed once it answers).
- A hard purge of everything bumps the version in its store before switching the
  keys to it (a restart never revives purged keys), to one above both the
  stored version and this process's, so no node ever served it before; the
  version a process serves never goes back (a relayed or recorded version
  older than its own is not adopted).  Old-version entries are reclaimed by
  one background task at a time, never on the request path.  While the version's
  store does not answer (PostgreSQL down), a hard purge of everything is a hard
  mark of everything instead: in force at once, relayed like any purge, and
  applied to both tiers in steps.
- Large purges and reclaims change the store in steps (the purge applier's
  ``L1_CHUNK`` / ``L2_CHUNK``), so the event loop (L1 work is synchronous)
  and the L2 thread (shared with request-path reads) are never held for the
  whole purge.
- Every purge but one of everything also purges the ``rewarm_also`` URLs
  (read at each purge from the live settings, :func:`~stoker.purge.scope.with_also`),
  soft or hard as it is; its result and its event name them when they were cached, so the warmer
  re-warms them with the purge's own URLs.
- Subscribers hear of a purge after it took effect for every reader
  (:class:`~stoker.purge.events.PurgeEvents`); L2's background part may still
  be running.
- An unsafe method's invalidation (RFC 9111 §4.4, :meth:`Purger.invalidate`) is a hard
  purge of primary keys on this same path (purge list, applier, relay, events); it is
  relayed without waiting for confirmations, adds no ``rewarm_also`` URLs and is not
  audited (an automatic invalidation, not an operator's change).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from stoker.cache.entry import CacheEntry
from stoker.cache.port import Cache, Purged
from stoker.cache.version_file import VersionState, VersionStore, newer
from stoker.clock import Clock
from stoker.purge.bus import Relay, RelaySlot
from stoker.purge.events import PurgeEvents
from stoker.purge.list import PurgeList, PurgeMark
from stoker.purge.scope import PurgeScope, with_also

log = logging.getLogger("stoker.purge")
URLS_SHOWN = 100


@dataclass(frozen=True, slots=True)
class PurgeResult:
    """What one purge did."""

    scope: PurgeScope
    purged: int  # live entries covered: deleted (hard) or made stale (soft)
    keys: tuple[str, ...]  # primary keys touched (empty for everything)
    urls: tuple[str, ...]
    version: str  # the cache version after the purge
    unconfirmed: tuple[str, ...] = ()
    """Processes sharing the cache that had not confirmed the purge in time."""
    l2_pending: bool = False
    """L2 did not answer: ``purged`` and ``keys`` are the memory tier's, and L2's part
    runs once it answers (the mark screens L2's reads meanwhile)."""

    def as_json(self) -> dict[str, Any]:
        """The admin API's answer (URLs capped at :data:`URLS_SHOWN`)."""
        return {"purged": self.purged, "soft": self.scope.soft, "scope": self.scope.as_json(),
                "keys": len(self.keys), "urls": list(self.urls[:URLS_SHOWN]),
                "urls_total": len(self.urls), "version": self.version,
                "unknown_hosts": list(self.scope.unknown_hosts),
                "unconfirmed": list(self.unconfirmed), "l2_pending": self.l2_pending}


class Keys(Protocol):
    """What the purger keys URLs with, and the cache version it serves under: the request
    core's (:class:`~stoker.proxy.keying.Keying`), so a URL purge removes exactly what a
    request for that URL would read."""

    version: str
    """The cache version, part of every primary key (switched by a hard purge of
    everything)."""

    def key_for_url(self, url: str) -> str:
        """The primary key a GET of the absolute ``url`` would use."""
        ...


def url_of_key(primary_key: str) -> str:
    """The (canonical) URL in a primary key ``version|url``."""
    return primary_key.split("|", 1)[1]


class Purger:
    """Runs purges (see the module invariants)."""

    def __init__(self, store: Cache, purges: PurgeList, events: PurgeEvents, clock: Clock,
                 versions: VersionStore, keys: Keys, *, also: Callable[[], tuple[str, ...]],
                 relays: RelaySlot) -> None:
        """``keys``: the request core's key function and cache version (a hard purge of
        everything switches it); ``also``: the ``rewarm_also`` URLs now
        (:func:`~stoker.purge.scope.also_urls` of the settings in force); ``relays``: where
        this process's relay is once it has one (the purges are relayed through it)."""
        self.store = store
        self.purges = purges
        self.events = events
        self._clock = clock
        self._versions = versions
        self._keys = keys
        self._also = also
        self._relays = relays
        self._reclaim_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def relay(self) -> Relay | None:
        """The other processes sharing the cache (``None``: this process alone)."""
        return self._relays.relay

    async def purge(self, scope: PurgeScope) -> PurgeResult:
        """Apply ``scope`` (with the ``rewarm_also`` URLs) now; return what it did."""
        scope = with_also(scope, self._also())
        if scope.everything:
            result = await self._purge_everything(scope)
        else:
            result = await self._purge_some(scope)
        log.info("purged %s (%s): %d entries", scope.kind, "soft" if scope.soft else "hard",
                 result.purged)
        if scope.unknown_hosts:
            log.warning("purge named hosts this site does not serve: unknown_hosts=%s "
                        "(%d entries purged); if they are the site's, add them to "
                        "site_aliases (or site_url)", ",".join(scope.unknown_hosts),
                        result.purged)
        await self.events.publish(scope, result.keys, result.urls)
        return result

    async def invalidate(self, keys: Sequence[str]) -> PurgeResult:
        """RFC 9111 §4.4: after a successful unsafe request, hard-purge the primary keys
        ``keys`` (its target URI and same-origin ``Location``/``Content-Location``, keyed
        by the request core) the way every purge goes: recorded in the purge list (a
        fetch in flight cannot store the old representation after it), applied to both
        tiers by the applier (in force for every read before this returns), relayed to
        the processes sharing the cache, and published to the purge events with the URLs
        it found cached (the warmer re-warms them, as after a purge of those URLs).

        Unlike :meth:`purge`, by decision: it is relayed without waiting for the others'
        confirmations (:meth:`~stoker.purge.bus.Relay.tell`: the unsafe request's answer
        is not held for them; they take it at their next poll), the ``rewarm_also`` URLs
        are not added (the site changed these URLs only), it logs no line (one per POST
        would drown the log) and it is not audited: the audit log records what operators
        and purge clients asked for, and an automatic invalidation is neither (the
        request that caused it is in the access log)."""
        self.purges.record(soft=False, now=self._clock.now(), keys=keys)
        mark = self.purges.latest
        try:
            found = await self.store.purge(mark)
        finally:
            relay = self.relay
            if relay is not None:
                relay.tell(mark)
        touched = tuple(found.primary_keys)
        scope = PurgeScope(urls=tuple(dict.fromkeys(map(url_of_key, keys))))
        result = PurgeResult(scope, found.entries, touched, _urls(touched),
                             self._keys.version, l2_pending=found.l2_pending)
        await self.events.publish(scope, result.keys, result.urls)
        return result

    async def entries_for_url(self, url: str) -> tuple[str, list[CacheEntry], set[str]]:
        """``(primary key, entries in either tier, variants in L1)`` for an absolute URL."""
        key = self._keys.key_for_url(url)
        in_l1 = {entry.variant for entry in self.store.get_l1(key) or ()}
        await self.store.flush()
        entries = {entry.variant: entry for entry in await self.store.get_l2(key)}
        for entry in self.store.get_l1(key) or ():
            entries.setdefault(entry.variant, entry)
        return key, [entries[variant] for variant in sorted(entries)], in_l1

    def resume_reclaim(self, state: VersionState) -> None:
        """Finish a reclaim a previous process left undone."""
        if not state.reclaimed:
            self._start_reclaim(state.version)

    def pending(self) -> int:
        """Background reclaims running now (cancelling :meth:`drain` cancels them)."""
        return len(self._tasks)

    async def drain(self) -> None:
        """Wait for background reclaims (at shutdown and in tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- internals -------------------------------------------------------------

    async def _purge_some(self, scope: PurgeScope) -> PurgeResult:
        self.purges.record(soft=scope.soft, now=self._clock.now(),
                           keys=[self._keys.key_for_url(url) for url in scope.urls],
                           prefixes=scope.prefixes, tags=scope.tags)
        found, unconfirmed = await self._apply_and_spread(self.purges.latest)
        keys = found.primary_keys
        await asyncio.sleep(0)  # listing 10,000 URLs is a step of its own
        return PurgeResult(scope, found.entries, tuple(keys), _urls(keys),
                           self._keys.version, unconfirmed, found.l2_pending)

    async def _purge_everything(self, scope: PurgeScope) -> PurgeResult:
        now = self._clock.now()
        if not scope.soft:
            try:
                version = (await self._versions.bump(self._keys.version)).version
            except Exception as error:
                log.warning("purge of everything: the cache version's record did not answer "
                            "(%s: %s); every entry is purged by a mark instead (in force at "
                            "once, relayed, deleted from both tiers in steps)",
                            type(error).__name__, error)
            else:
                return await self._switch_to(scope, now, version)
        self.purges.record(soft=scope.soft, now=now, everything=True)
        found, unconfirmed = await self._apply_and_spread(self.purges.latest)
        return PurgeResult(scope, found.entries, (), (), self._keys.version,
                           unconfirmed, found.l2_pending)

    async def _switch_to(self, scope: PurgeScope, now: float, version: str) -> PurgeResult:
        """Serve under ``version``, bumped in its store already, and relay it."""
        self.purges.record(soft=False, now=now, everything=True)
        self.adopt_version(version)
        purged = await self.store.count()  # not waiting for queued writes
        return PurgeResult(scope, purged, (), (), version,
                           await self._spread(self.purges.latest, version))

    def adopt_version(self, version: str) -> bool:
        """Serve under cache ``version`` from now on (persisted already: by this process's
        purge of everything, or another's) and reclaim what older versions left; unless
        it is not newer than the version served (a version never goes back).  Whether
        it was adopted."""
        if not newer(version, self._keys.version):
            return False
        self._keys.version = version
        self._start_reclaim(version)
        return True

    async def _apply_and_spread(self, mark: PurgeMark) -> tuple[Purged, tuple[str, ...]]:
        """Apply ``mark`` here and relay it, side by side: the application's first step
        (the mark in force for every read here) runs before the relay publishes, and
        neither waits for the other, so an L2 that does not answer delays no relay."""
        applying = asyncio.ensure_future(self.store.purge(mark))
        try:
            unconfirmed = await self._spread(mark, None)
        finally:
            found = await applying
        if found.l2_pending:
            log.warning("purge: L2 did not answer; its part is queued and runs once L2 "
                        "answers (the purge screens L2's reads meanwhile)")
        return found, unconfirmed

    async def _spread(self, mark: PurgeMark, version: str | None) -> tuple[str, ...]:
        """Relay ``mark`` to the processes sharing the cache (if any); those that had not
        confirmed it in time."""
        relay = self.relay
        return () if relay is None else await relay.spread(mark, version)

    def _start_reclaim(self, version: str) -> None:
        task = asyncio.create_task(self._reclaim(version), name=f"stoker-reclaim-{version}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _reclaim(self, version: str) -> None:
        async with self._reclaim_lock:
            if version != self._keys.version:
                return  # a later bump's reclaim covers this one
            try:
                removed = await self.store.delete_except_version(version)
                if version == self._keys.version:
                    await self._versions.save(VersionState(version, reclaimed=True))
            except Exception:
                log.exception("reclaiming entries older than cache version %s failed; "
                              "the next start retries", version)
                return
            log.info("reclaimed %d entries older than cache version %s", removed, version)


def _urls(keys: Iterable[str]) -> tuple[str, ...]:
    """The distinct URLs of ``keys``, sorted.  Keys come sorted, so their URLs come in
    sorted runs (one per cache version) that the sort merges in linear time; a set would
    have scrambled them (2 ms instead of 4 ms of one loop step for 10,000 keys)."""
    return tuple(sorted(dict.fromkeys(map(url_of_key, keys))))

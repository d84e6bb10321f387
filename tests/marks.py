"""Purge marks put in force for a memory tier, as the purge applier does."""

from __future__ import annotations

from collections.abc import Iterable

from stoker.cache.memory import MemoryStore
from stoker.clock import Clock
from stoker.purge.list import L1, PurgeMark


def in_force(store: MemoryStore, clock: Clock, *, soft: bool, tags: Iterable[str] = (),
             keys: Iterable[str] = ()) -> PurgeMark:
    """Record a purge of ``tags`` and ``keys`` in ``store``'s purge list and begin it for
    L1 (until ``store.purges.applied(mark, L1)``, every L1 read obeys it)."""
    store.purges.record(soft=soft, now=clock.now(), tags=tags, keys=keys)
    mark = store.purges.latest
    store.purges.begin(mark, (L1,))
    return mark

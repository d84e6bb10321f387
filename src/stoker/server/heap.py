"""The serving process's garbage-collector policy: full collections that cost what changed
since the last one, not what is cached.

CPython's full collection traverses every object its collector tracks, and a cache keeps
tens of thousands alive (per L1 entry: the entry, its slot, the slot's dict and list, a
tag set).  They never die in a reference cycle: an evicted or purged entry is freed
by its reference count.  So a full collection with a large L1 is a long pause that finds
almost nothing (measured: 16 to 27 ms for 10,000 entries, growing with them, and 5 objects of
cyclic garbage found in 4 full collections over 4,500 misses).

Policy, applied by :class:`HeapKeeper` after full collections (see :func:`next_step`):

- at start-up, :func:`freeze_heap` sets aside the imported modules, classes and functions;
- after a full collection, at most every ``freeze_every`` seconds, everything that survived
  it is set aside too (``gc.freeze``), so later full collections traverse only what was
  made since; and after any full collection that took ``slow`` seconds or more (a heap
  that grew a lot since the last freeze: a fill, a soft purge's copies), whenever the last
  freeze was, so the next one does not take as long again;
- every ``deep_every`` seconds everything set aside is handed back (``gc.unfreeze``), so
  the next full collection traverses the whole heap once.

Outside the keeper, :func:`set_aside_young` (a soft purge's steps) collects the young
generations and sets aside what survived them.

Invariants: a set-aside object is still freed as soon as its reference count drops to
zero; only an object in a reference cycle that dies after being set aside (one a request
in flight held at that instant, say), or that :func:`set_aside_young` found already dead
in the old generation, waits to be collected, and never longer than ``deep_every`` plus
the time until the next full collection.
"""

from __future__ import annotations

import enum
import gc
import sys
from collections.abc import Callable
from typing import Any

from stoker.clock import Clock, SystemClock

MEASURED_ON = ((3, 11),)
"""The CPython versions this policy was measured on; elsewhere :func:`applies` is False and
the serving process keeps the collector's own policy (3.12 and 3.14 changed the collector)."""
FREEZE_EVERY = 10.0
"""Seconds between two freezes at least (each may set aside what was in flight)."""
DEEP_EVERY = 3600.0
"""Seconds between two full collections of the whole heap at most (once per hour)."""
SLOW = 0.004
"""Seconds a full collection may take before what survived it is set aside at once: it
would take as long on every full collection until the next freeze."""


class Step(enum.Enum):
    """What to do after a full collection."""

    NOTHING = "nothing"
    FREEZE = "freeze"
    UNFREEZE = "unfreeze"


def next_step(now: float, last_freeze: float, last_deep: float, took: float = 0.0, *,
              freeze_every: float = FREEZE_EVERY, deep_every: float = DEEP_EVERY,
              slow: float = SLOW) -> Step:
    """The step due after a full collection that ended at ``now`` (seconds, any monotonic
    origin) and took ``took`` seconds: a deep collection is due first, then a freeze."""
    if now - last_deep >= deep_every:
        return Step.UNFREEZE
    if now - last_freeze >= freeze_every or took >= slow:
        return Step.FREEZE
    return Step.NOTHING


def set_aside_young() -> None:
    """Collect the young generations and set aside what survived, where a
    :class:`HeapKeeper` runs this process's collector (elsewhere: nothing).

    For a step of work that replaces old objects by new ones one for one: a soft purge
    copies every entry it makes stale.  CPython counts each freed object against a new
    one, so no young collection runs while the copies pile up, and the first one that
    does traverses them all at once (~10 ms for 10,000 copies), as a full collection
    would later.  Called after each step, each collection is one step's worth, and the
    copies join the set-aside heap of the entries they replace (freed as soon as their
    reference count drops to zero, like every set-aside object).
    """
    if any(isinstance(callback, HeapKeeper) for callback in gc.callbacks):
        gc.collect(1)
        gc.freeze()


def applies() -> bool:
    """Whether this interpreter is one the policy was measured on (:data:`MEASURED_ON`)."""
    return sys.implementation.name == "cpython" and sys.version_info[:2] in MEASURED_ON


def freeze_heap() -> None:
    """Collect garbage once, then move every object alive now out of the collector's view.

    Called once per serving process, after its imports and before it serves: the
    modules, classes and functions loaded by then (about 50,000 tracked objects) live
    as long as the process, yet a full collection would traverse them every time
    (``gc.freeze``).  Objects made later are collected as usual.
    """
    gc.collect()
    gc.freeze()


class HeapKeeper:
    """Applies :func:`next_step` after every full collection (a ``gc.callbacks`` entry)."""

    def __init__(self, *, freeze_every: float = FREEZE_EVERY, deep_every: float = DEEP_EVERY,
                 slow: float = SLOW, clock: Clock | None = None,
                 freeze: Callable[[], None] = gc.freeze,
                 unfreeze: Callable[[], None] = gc.unfreeze) -> None:
        self.freeze_every = freeze_every
        self.deep_every = deep_every
        self.slow = slow
        self._clock = clock or SystemClock()
        self._freeze = freeze
        self._unfreeze = unfreeze
        self._last_freeze = self._last_deep = self._clock.monotonic()
        self._started = self._last_freeze
        """When the running full collection began."""
        self.freezes = 0
        self.deep = 0

    def install(self) -> None:
        """Start applying the policy in this process (idempotent)."""
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def uninstall(self) -> None:
        """Stop applying it (what is set aside stays so)."""
        if self in gc.callbacks:
            gc.callbacks.remove(self)

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        now = self._clock.monotonic()
        if phase == "start":
            self._started = now
            return
        step = next_step(now, self._last_freeze, self._last_deep, now - self._started,
                         freeze_every=self.freeze_every, deep_every=self.deep_every,
                         slow=self.slow)
        if step is Step.UNFREEZE:
            self._unfreeze()
            self._last_deep = now
            self.deep += 1
        elif step is Step.FREEZE:
            self._freeze()
            self._last_freeze = now
            self.freezes += 1


def heap_status() -> dict[str, Any]:
    """The collector's state, for ``/api/status``: objects set aside now, collections run
    per generation, and the installed keeper's freezes and deep collections (``None``
    where no keeper is installed)."""
    keeper = next((each for each in gc.callbacks if isinstance(each, HeapKeeper)), None)
    return {"frozen_objects": gc.get_freeze_count(),
            "collections": [generation["collections"] for generation in gc.get_stats()],
            "freezes": keeper.freezes if keeper else None,
            "deep_collections": keeper.deep if keeper else None}

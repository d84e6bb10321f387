"""The garbage-collector policy (stoker.server.heap): what is due after a full collection, and
that a serving process applies it (``run_async``)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.clock import FakeClock
from stoker.server.heap import (
    DEEP_EVERY,
    FREEZE_EVERY,
    SLOW,
    HeapKeeper,
    Step,
    heap_status,
    next_step,
)

SECONDS = st.floats(0, 1e6, allow_nan=False)


@given(SECONDS, SECONDS, SECONDS, st.floats(0, 1, allow_nan=False))
def test_a_deep_collection_comes_first_then_a_freeze_else_nothing(
        now: float, since_freeze: float, since_deep: float, took: float) -> None:
    step = next_step(now, now - since_freeze, now - since_deep, took)
    if since_deep >= DEEP_EVERY:
        assert step is Step.UNFREEZE
    elif since_freeze >= FREEZE_EVERY or took >= SLOW:
        assert step is Step.FREEZE
    else:
        assert step is Step.NOTHING


class Calls:
    def __init__(self) -> None:
        self.log: list[str] = []

    def freeze(self) -> None:
        self.log.append("freeze")

    def unfreeze(self) -> None:
        self.log.append("unfreeze")


def keeper(clock: FakeClock, calls: Calls) -> HeapKeeper:
    return HeapKeeper(freeze_every=60, deep_every=3600, clock=clock,
                      freeze=calls.freeze, unfreeze=calls.unfreeze)


def test_the_keeper_acts_after_full_collections_only_and_at_most_as_often_as_due() -> None:
    clock, calls = FakeClock(), Calls()
    keep = keeper(clock, calls)
    for generation in (0, 1):
        clock.advance(100)
        keep("stop", {"generation": generation, "collected": 0, "uncollectable": 0})
    keep("start", {"generation": 2})
    assert calls.log == []
    keep("stop", {"generation": 2})
    assert calls.log == ["freeze"]
    clock.advance(30)
    keep("start", {"generation": 2})
    clock.advance(0.001)
    keep("stop", {"generation": 2})  # within freeze_every of the last freeze, and quick
    assert calls.log == ["freeze"]
    keep("start", {"generation": 2})
    clock.advance(2 * SLOW)
    keep("stop", {"generation": 2})  # as slow as a large unfrozen heap makes it
    assert calls.log == ["freeze", "freeze"]
    clock.advance(3600 - clock.monotonic())
    keep("stop", {"generation": 2})  # an hour since the keeper started: hand it all back
    keep("stop", {"generation": 2})  # the deep collection just ran: set it aside again
    assert calls.log == ["freeze", "freeze", "unfreeze", "freeze"]
    assert (keep.freezes, keep.deep) == (3, 1)


PROBE = """
import gc
from stoker.clock import FakeClock
from stoker.server.heap import HeapKeeper
from stoker.server.listeners import run_async
seen = []
async def main():
    seen.append(gc.get_freeze_count())
    seen.append(sum(isinstance(callback, HeapKeeper) for callback in gc.callbacks))
run_async(main())
print(*seen)
"""


def test_run_async_freezes_the_heap_loaded_before_it_and_installs_the_keeper() -> None:
    # In a child process: freezing is process-wide, and must not touch the test run's heap.
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True)
    frozen, keepers = map(int, out.stdout.split())
    assert frozen > 1000  # the modules, classes and functions imported so far
    assert keepers == 1


FREEZES = """
import gc
from stoker.clock import FakeClock
from stoker.server.heap import HeapKeeper
keep = HeapKeeper(freeze_every=0)
keep.install()
keep.install()
kept = [object() for _ in range(10)]
gc.collect()
print(gc.get_freeze_count() > 0, keep.freezes, gc.callbacks.count(keep))
keep.deep_every = 0
gc.collect()
print(gc.get_freeze_count(), keep.deep)
keep.uninstall()
print(keep in gc.callbacks)
"""


def test_a_real_full_collection_freezes_what_survived_and_a_deep_one_hands_it_back() -> None:
    out = subprocess.run([sys.executable, "-c", FREEZES], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split("\n")[:3] == ["True 1 1", "0 1", "False"]


def test_the_status_shows_the_installed_keeper_and_none_without_one() -> None:
    assert heap_status()["freezes"] is None  # the test run installs none
    clock, calls = FakeClock(), Calls()
    keep = keeper(clock, calls)
    keep.install()
    try:
        clock.advance(60)
        keep("stop", {"generation": 2})
        status = heap_status()
    finally:
        keep.uninstall()
    assert (status["freezes"], status["deep_collections"]) == (1, 0)
    assert len(status["collections"]) == 3 and status["frozen_objects"] >= 0


SET_ASIDE = """
import gc
from stoker.server.heap import HeapKeeper, set_aside_young
young = [[] for _ in range(500)]  # survivors of the young collection
frozen = gc.get_freeze_count()
set_aside_young()
without = gc.get_freeze_count() - frozen
keeper = HeapKeeper()
keeper.install()
set_aside_young()
print(without, gc.get_freeze_count() - frozen >= 500, gc.get_count()[:2])
"""


def test_young_objects_are_set_aside_only_where_a_keeper_runs_the_collector() -> None:
    """A fresh interpreter: whether anything is set aside is the whole process's state."""
    done = subprocess.run([sys.executable, "-c", SET_ASIDE], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["0", "True", "(0,", "0)"]


RUN_ASYNC = """
import asyncio, gc, sys
import stoker.server.heap
from stoker.server.heap import HeapKeeper
from stoker.server.listeners import run_async
stoker.server.heap.MEASURED_ON = {measured}
async def main():
    print(any(isinstance(c, HeapKeeper) for c in gc.callbacks), gc.get_freeze_count() > 0)
run_async(main())
"""


@pytest.mark.parametrize(("measured", "expected"), [
    ("((sys.version_info[0], sys.version_info[1]),)", "True True"),  # measured here
    ("((2, 7),)", "False False"),  # an interpreter it was not measured on
])
def test_the_policy_is_installed_only_where_it_was_measured(measured: str,
                                                            expected: str) -> None:
    done = subprocess.run([sys.executable, "-c", RUN_ASYNC.format(measured=measured)],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == expected

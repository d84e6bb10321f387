"""The cache version only grows: what a store keeps on a save or a bump, what a process
does on reading the record (:mod:`stoker.cache.version_file`), and the watch that keeps
a process on the record (:mod:`stoker.cache.version_watch`), over a store in memory."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.cache.version_file import (
    VersionState,
    bumped,
    merged,
    newer,
    next_version,
    settle,
    version_number,
)
from stoker.cache.version_watch import OK, VersionWatch
from stoker.clock import FakeClock

versions = st.integers(min_value=0, max_value=10**12).map(str)
states = st.builds(VersionState, versions, st.booleans())


@given(states, states)
def test_a_save_never_takes_the_stored_version_back(stored: VersionState,
                                                    offered: VersionState) -> None:
    kept = merged(stored, offered)
    assert kept in (stored, offered)
    assert version_number(kept.version) == max(version_number(stored.version),
                                               version_number(offered.version))
    if offered.version == stored.version:
        assert kept == offered  # the reclaim of the same version is noted


@given(states, versions)
def test_a_bump_goes_above_the_stored_version_and_the_bumpers(stored: VersionState,
                                                             past: str) -> None:
    state = bumped(stored, past)
    assert newer(state.version, stored.version) and newer(state.version, past)
    assert state.version in (next_version(stored.version), next_version(past))
    assert state.reclaimed is False


@given(versions, versions)
def test_settling_on_the_record_never_moves_a_process_back(mine: str, record: str) -> None:
    action = settle(mine, record)
    assert (action == "adopt") == newer(record, mine)
    assert (action == "raise") == newer(mine, record)
    assert (action == "same") == (mine == record)


def test_a_version_that_is_not_an_integer_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'v2'"):
        newer("v2", "1")


class Record:
    """A version store in memory (the contract's stores are tested on their backends)."""

    def __init__(self, version: str, *, fails: bool = False) -> None:
        self.state = VersionState(version)
        self.fails = fails

    async def load(self) -> VersionState:
        if self.fails:
            raise ConnectionError("refused")
        return self.state

    async def save(self, state: VersionState) -> None:
        self.state = merged(self.state, state)

    async def bump(self, past: str) -> VersionState:
        self.state = bumped(self.state, past)
        return self.state


class Serving:
    """A process's version, switched only forward (as the purger's ``adopt_version``)."""

    def __init__(self, version: str) -> None:
        self.version = version

    def adopt(self, version: str) -> bool:
        if not newer(version, self.version):
            return False
        self.version = version
        return True


def watch(record: Record, serving: Serving) -> VersionWatch:
    return VersionWatch(record, lambda: serving.version, serving.adopt, FakeClock())


async def test_a_process_behind_the_record_adopts_it_at_once() -> None:
    record, serving = Record("3"), Serving("2")
    assert await watch(record, serving).check() == OK
    assert serving.version == "3"


async def test_a_record_behind_the_process_is_raised_and_the_process_stays() -> None:
    record, serving = Record("1"), Serving("4")  # the record lost, or restored from a backup
    assert await watch(record, serving).check() == OK
    assert (serving.version, record.state) == ("4", VersionState("4", reclaimed=False))


async def test_a_record_that_cannot_be_read_makes_the_process_not_ready_naming_why() -> None:
    record, serving = Record("2", fails=True), Serving("2")
    found = await watch(record, serving).check()
    assert found == ("cannot read or keep the cache version's record: "
                     "ConnectionError: refused")
    assert serving.version == "2"


async def test_a_process_that_cannot_adopt_the_record_says_it_differs() -> None:
    record, serving = Record("5"), Serving("2")
    stuck = VersionWatch(record, lambda: serving.version, lambda version: False, FakeClock())
    assert await stuck.check() == "cache version 2 here, the record's is 5"

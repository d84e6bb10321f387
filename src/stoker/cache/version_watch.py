"""Keeping a process on the record of the cache version (:mod:`stoker.cache.version_file`).

A process reads the record at start, then every :data:`CHECK_EVERY` seconds and
whenever ``/readyz`` asks (:meth:`VersionWatch.check`).  A record newer than the version
the process serves means it missed a bump (the purge of everything relayed while it was
behind the bus, or never relayed): it adopts the record's at once, so what a purge of
everything retired is not served here a moment longer.  A record older than its own
means the record was lost or restored from an older copy: it raises the record back to
its own, never going back itself.

Invariants: a process's version never goes back (:func:`~stoker.cache.version_file.
settle`, and the purger adopts only a newer one); :meth:`VersionWatch.check` answers
:data:`OK` only when, at the read it made, this process serves the record's version
(after adopting or raising), and otherwise why not, which ``/readyz`` reports (503);
repeated failures of the periodic check are said as :mod:`stoker.resilience.outage`
says (one line when they start, one every ``SAY_EVERY`` seconds, one when they end).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from stoker.cache.version_file import VersionState, VersionStore, settle
from stoker.clock import Clock
from stoker.resilience import outage

log = logging.getLogger("stoker.purge")

CHECK_EVERY: Final = 1.0
"""Seconds between two reads of the record (the purge relay's heartbeat)."""
OK: Final = "ok"


class VersionWatch:
    """Reads the record of ``versions`` and keeps this process on it: ``serving`` says
    the version it serves, ``adopt`` switches it to a newer one."""

    def __init__(self, versions: VersionStore, serving: Callable[[], str],
                 adopt: Callable[[str], object], clock: Clock) -> None:
        self._versions = versions
        self._serving = serving
        self._adopt = adopt
        self._clock = clock

    async def check(self) -> str:
        """Read the record, adopt or raise it (see the module docstring); :data:`OK`, or
        why this process is not on it."""
        try:
            record = (await self._versions.load()).version
            mine = self._serving()
            match settle(mine, record):
                case "adopt":
                    log.warning("cache version %s here, the record's is %s (a purge of "
                                "everything not heard of): adopting it", mine, record)
                    self._adopt(record)
                case "raise":
                    log.warning("the record of the cache version says %s, behind this "
                                "process's %s (lost, or restored from an older copy?): "
                                "raising it back", record, mine)
                    await self._versions.save(VersionState(mine, reclaimed=False))
                    record = mine
        except Exception as error:  # what a store raises when unreachable varies by backend
            return f"cannot read or keep the cache version's record: " \
                   f"{type(error).__name__}: {error}"
        mine = self._serving()
        return OK if mine == record else f"cache version {mine} here, the record's is {record}"

    async def run(self) -> None:
        """:meth:`check` every :data:`CHECK_EVERY` seconds until cancelled."""
        state = outage.Outage()
        while True:
            await self._clock.sleep(CHECK_EVERY)
            found = await self.check()
            if found == OK:
                state, back = outage.answered(state)
                if back:
                    log.info("this process is on the cache version's record again")
                continue
            state, say = outage.failed(state, self._clock.monotonic())
            if say:
                log.warning("%s; /readyz says not ready until it is (checked every %g s, "
                            "%d times so far)", found, CHECK_EVERY, state.failures)

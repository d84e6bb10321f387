"""Purged URLs on their way to the debounced re-warm, recorded behind the purge call.

A purge call waits for its subscribers (:mod:`stoker.purge.events`).  Writing a
10,000-URL purge into :class:`~stoker.warm.pending.PendingUrls` is 40-70 ms of CPU on
a store thread that runs below the event loop, so under load it took the call past
100 ms.  :class:`RewarmRecorder` takes the URLs at once and writes them in the
background, then arms the ``rewarm`` deadline, as the purge call did before, telling
the arm how many URLs that purge made cold (a small purge is re-warmed at once:
:func:`~stoker.warm.warmer.rewarm_at_once`).

Invariants:
- :meth:`RewarmRecorder.add` never waits and never raises.  Purges are written one at
  a time, in the order they were added, each with the time it was added, by ONE task,
  so the pending table and the deadline see them as the purge calls made them.
- A write or an arm that fails is logged and retried after :data:`RETRY_FIRST`
  seconds, doubling to :data:`RETRY_MOST`; the batch stays first in line and is never
  dropped while the process lives.  (Adding a URL again is harmless: the store keeps a
  URL once, with its first time.)
- :meth:`RewarmRecorder.settle` returns once everything added before it is written and
  armed.  :meth:`RewarmRecorder.close` settles for at most ``timeout`` seconds, then
  stops the task and logs how many URLs were not recorded.  A crash loses the URLs
  still in memory: the re-warm of the purges of the last moments (their pages stay
  cold until visited or the next full run), never the purge itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

from stoker.warm.pending import PendingUrls

log = logging.getLogger("stoker.warm")

RETRY_FIRST: Final = 1.0
"""Seconds before a failed write is tried again (doubling after each failure)."""
RETRY_MOST: Final = 30.0
"""The longest wait between two tries."""

ArmRewarm = Callable[[int], Awaitable[object]]
"""Arms the ``rewarm`` deadline after a purge of that many URLs was written."""


class RewarmRecorder:
    """Writes purged URLs to ``pending`` and calls ``arm`` with their number after each
    purge's write, in the background (see the module invariants)."""

    def __init__(self, pending: PendingUrls, arm: ArmRewarm, *,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._pending = pending
        self._arm = arm
        self._sleep = sleep
        self._batches: deque[tuple[list[str], float]] = deque()
        self._task: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()

    def add(self, urls: Sequence[str], now: float) -> None:
        """Record ``urls``, purged at ``now``, for the next re-warm."""
        if not urls:
            return
        self._batches.append((list(urls), now))
        self._idle.clear()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._write_all(), name="stoker-rewarm-recorder")

    def waiting(self) -> int:
        """URLs added and not written yet."""
        return sum(len(urls) for urls, _ in self._batches)

    async def settle(self) -> None:
        """Wait until every URL added so far is written and the deadline armed."""
        await self._idle.wait()

    async def close(self, timeout: float) -> None:
        """Settle within ``timeout`` seconds, then stop; log what was left unrecorded."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.settle(), timeout)
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._batches:
            log.error("shutting down with %d purged URLs not recorded for their re-warm "
                      "(the pending store kept failing)", self.waiting())

    async def _write_all(self) -> None:
        delay = RETRY_FIRST
        while self._batches:
            urls, now = self._batches[0]
            try:
                await self._pending.add(urls, now)
                await self._arm(len(urls))
            except Exception:
                log.exception("could not record %d purged URLs for their re-warm; "
                              "trying again in %.0f s", len(urls), delay)
                await self._sleep(delay)
                delay = min(delay * 2, RETRY_MOST)
                continue
            delay = RETRY_FIRST
            self._batches.popleft()
        self._idle.set()

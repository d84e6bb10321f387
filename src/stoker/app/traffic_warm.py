"""Warming on an app's own traffic, as an edge runtime does: no worker process, no
timer; after the app answered a request, one small batch of due warm work runs in the
background (an embedded Stoker with ``warm=True``, :mod:`stoker.embed`).

A batch is one pass of the warmer's ticker (:meth:`~stoker.schedule.ticker.Ticker.run_due`:
re-warms after purges, the refresh and recovery runs, the hit statistics' flush, L2
eviction, the audit log's prune) and then at most ``budget`` warm jobs
(:meth:`~stoker.jobs.worker.Worker.run_batch`: a collect, or a URL's visits each).

Invariants:
- :meth:`TrafficWarm.after_response` never waits and never raises: the response it
  follows is sent already; it only decides (:func:`batch_due`, pure) and starts a task.
- At most one batch runs at a time per process.
- Deciding asks no store: a batch is due when something was armed through this
  process's ticker for now or earlier (:attr:`~stoker.schedule.ticker.Ticker.armed_wake`),
  when the job queue signalled new work (its in-process wake-up, watched by one idle
  task), when the last batch used its whole budget (more may wait), when the store's
  next deadline has come, or every :data:`RECHECK` seconds (what other processes armed
  or queued; the ticker's loop looks as often).
- A batch that fails is logged; the next one is due at the next look.
- :meth:`TrafficWarm.close` cancels the batch running (its jobs released as a worker's
  shutdown releases them) and the watch, then closes the warm service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Final

from stoker.app.warm_service import WarmService
from stoker.jobs.worker import Worker
from stoker.schedule.ticker import DEFAULT_MAX_SLEEP, earliest
from stoker.warm.warmer import QUEUE

log = logging.getLogger("stoker.warm")

RECHECK: Final = DEFAULT_MAX_SLEEP
"""Seconds between two looks at the stores when nothing is known to be due."""


@dataclass(frozen=True, slots=True)
class Known:
    """What a process knows, without asking a store, of the warm work due."""

    wake: float | None
    """The next wake time known (the last batch's, or what was armed since)."""
    work_signalled: bool
    """The job queue signalled new work since the last batch."""
    last_look: float | None
    """When the last batch started (``None``: never)."""


def batch_due(known: Known, now: float, recheck: float = RECHECK) -> bool:
    """Whether a batch is due at ``now`` (see the module invariants).  Pure."""
    if known.work_signalled or known.last_look is None:
        return True
    if known.wake is not None and known.wake <= now:
        return True
    return now - known.last_look >= recheck


class TrafficWarm:
    """Runs ``service``'s warm work in batches after responses (see the module)."""

    def __init__(self, service: WarmService, budget: int) -> None:
        if budget < 1:
            raise ValueError(f"warm_budget must be at least 1 warm job, got {budget}")
        self.service = service
        self.budget = budget
        self._worker: Worker = service.worker(min(budget, service.stoker.settings.warm_jobs
                                                  or budget))
        self._wake: float | None = None
        self._signalled = False
        self._last_look: float | None = None
        self._batch: asyncio.Task[None] | None = None
        self._watch: asyncio.Task[None] | None = None
        self.batches = 0
        """Batches run so far (for tests and the status)."""

    def known(self) -> Known:
        """What is known now of the work due (no store asked)."""
        return Known(earliest(self._wake, self.service.ticker.armed_wake), self._signalled,
                     self._last_look)

    def after_response(self) -> None:
        """A response was sent: start a batch if one is due and none runs."""
        if self._batch is not None and not self._batch.done():
            return
        if self._watch is None:
            self._watch = asyncio.get_running_loop().create_task(
                self._watch_work(), name="stoker-traffic-warm-watch")
        if batch_due(self.known(), self.service.stoker.clock.now()):
            self._batch = asyncio.get_running_loop().create_task(
                self._run_batch(), name="stoker-traffic-warm")

    async def settle(self) -> None:
        """Wait for the batch running, if any (tests, and a shutdown's last work)."""
        if self._batch is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._batch)

    async def _run_batch(self) -> None:
        clock = self.service.stoker.clock
        self._signalled = False
        self._last_look = clock.now()
        try:
            wake = await self.service.ticker.run_due()
            leased = await self._worker.run_batch(self.budget)
        except Exception:
            log.exception("warm work on traffic failed; trying again at the next look")
            return
        finally:
            self.batches += 1
        self._wake = clock.now() if leased >= self.budget else wake

    async def _watch_work(self) -> None:
        """Note the job queue's in-process wake-ups (new jobs): no store is asked."""
        queue = self.service.stores.queue
        while True:
            try:
                if await queue.wait_for_work(QUEUE, RECHECK):
                    self._signalled = True
            except Exception:  # its database is down: the batches' looks find out
                await asyncio.sleep(RECHECK)

    async def close(self, timeout: float) -> None:
        """Cancel the batch and the watch, then close the warm service (``timeout``: its
        budget for recording purged URLs)."""
        for task in (self._batch, self._watch):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self.service.close(timeout)

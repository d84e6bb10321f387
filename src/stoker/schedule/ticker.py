"""The one timer of a process: sleep until the earliest persisted deadline, run what is due.

``Ticker(store, clock, owner)``; ``register(name, handler, retry_delay)`` per
purpose; ``await run(stop)`` until ``stop`` is set. Anything may ``arm`` (here,
which also pokes the loop, or straight on the store from anywhere).

Invariants:
- Time comes only from the injected clock: the loop sleeps with
  ``clock.sleep`` until the earliest wake time of a registered purpose (due
  time, or a foreign claim's lease end), at most ``max_sleep`` seconds (so arms
  made by other processes are seen), and wakes early on :meth:`poke` or stop.
- A handler runs only after this ticker's ``owner`` claimed its deadline in the
  store (compare-and-set), so of all tickers on all nodes exactly one runs a
  given due deadline; a purpose runs at most once at a time per process, and
  different purposes run concurrently, each in its own task.
- Success completes the deadline (disarmed unless re-armed meanwhile); an
  exception is recorded with ``fail`` (due again after the purpose's
  ``retry_delay``, or the delay a :class:`RetryIn` names); a run cancelled by
  stop is recorded as failed and due at once, so another process or the next
  start runs it: nothing armed is lost.
  Runs are at least once: a run whose outcome could not be stored (database
  down) runs again when its claim's lease ends.
- :meth:`Ticker.run_due` is one pass without the loop (a process whose traffic drives its
  work: an embedded Stoker): it claims and runs what is due, waits for those runs, and
  returns the next wake time it knows (the store's, and what was armed meanwhile
  through :meth:`Ticker.arm`).  :attr:`Ticker.armed_wake` is the earliest due time armed
  through this ticker since the last pass, read without asking the store.
- ``run`` returns promptly once ``stop`` is set: handlers in flight are
  cancelled (never a run whose outcome is being recorded), and it returns once
  their outcomes are recorded (or, the store not answering, given up on: those
  runs go again when their claims' leases end).
- A store that does not answer (its database down or restarting) is tried again at
  the pace of :mod:`stoker.resilience.outage` (1 s, doubling, at most ``max_sleep``): reading
  and claiming the deadlines, and recording a run's outcome while the ticker runs
  (so a run that ended during an outage is not left claimed until its lease ends).
  A run that failed while the store could not take its failure at once is taken for
  the store's failure (the handler most likely failed on the same database): it is
  recorded due at once, not ``retry_delay`` later, so it runs as soon as the store
  answers.
  The outage is logged when it starts, every ``SAY_EVERY`` seconds while it lasts
  and when it ends, not at every try.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from stoker.clock import Clock
from stoker.resilience import outage
from stoker.schedule.deadlines import due, next_wake
from stoker.schedule.store import ArmMode, Deadline, DeadlineStore

log = logging.getLogger("stoker.schedule")

Handler = Callable[[Deadline], Awaitable[None]]
"""Runs one purpose; gets the claimed row (``attempts`` counts this try)."""

ForceResult = Literal["done", "failed", "idle"]
"""``idle``: nothing was armed, or another owner's live claim holds it."""

DEFAULT_LEASE = 300.0
DEFAULT_MAX_SLEEP = 30.0
STOPPED_ERROR = "cancelled: the ticker stopped during the run"


@dataclass(frozen=True, slots=True)
class Purpose:
    """How one deadline name is run."""

    handler: Handler
    retry_delay: float
    lease: float


class RetryIn(Exception):
    """Raised by a handler whose run should go again ``delay`` seconds from now (not the
    purpose's ``retry_delay``): a run that waits on something outside with its own
    backoff.  Recorded as a failure (its ``attempts`` keep counting)."""

    def __init__(self, delay: float, reason: str) -> None:
        super().__init__(reason)
        self.delay = delay


class Ticker:
    """One loop per process over the persisted deadlines (see the module invariants)."""

    def __init__(self, store: DeadlineStore, clock: Clock, owner: str, *,
                 max_sleep: float = DEFAULT_MAX_SLEEP) -> None:
        if max_sleep <= 0:
            raise ValueError(f"ticker max_sleep must be > 0 seconds, got {max_sleep}")
        self._store = store
        self._clock = clock
        self._owner = owner
        self._max_sleep = max_sleep
        self._purposes: dict[str, Purpose] = {}
        self._running: dict[str, asyncio.Task[bool]] = {}
        self.alive = False
        """True while :meth:`run` loops (for readiness checks)."""
        self._in_handler: set[str] = set()
        self._poked = asyncio.Event()
        self._stop: asyncio.Event | None = None
        self._outage = outage.Outage()
        self.armed_wake: float | None = None
        """The earliest due time armed through :meth:`arm` since the last pass (``None``:
        none), known without asking the store."""

    def register(self, name: str, handler: Handler, retry_delay: float, *,
                 lease: float = DEFAULT_LEASE) -> None:
        """Run ``handler`` when ``name`` is due; after a failure retry ``retry_delay`` later.

        ``lease``: how long a claim holds; a run must end well within it, or
        another process may take the deadline over and run it too."""
        if name in self._purposes:
            raise ValueError(f"deadline {name!r} already has a handler")
        if retry_delay < 0 or lease <= 0:
            raise ValueError(f"deadline {name!r}: retry_delay must be >= 0 and lease > 0 seconds")
        self._purposes[name] = Purpose(handler, retry_delay, lease)

    def poke(self) -> None:
        """Wake the loop to look at the store again (after an arm in this process)."""
        self._poked.set()

    async def arm(self, name: str, mode: ArmMode, delay: float,
                  max_wait: float | None = None) -> Deadline:
        """Arm ``name`` in the store as of the clock's now, then poke the loop."""
        row = await self._store.arm(name, mode, self._clock.now(), delay, max_wait)
        self.armed_wake = earliest(self.armed_wake, row.due_at)
        self.poke()
        return row

    async def run_due(self) -> float | None:
        """One pass without the loop: run every due deadline this ticker may claim, wait
        for those runs (their failures recorded, not raised); the next wake time known
        (``None``: nothing armed).  Not to be called while :meth:`run` loops."""
        self.armed_wake = None
        wake = await self._tick()
        running = list(self._running.values())
        if running:
            await asyncio.wait(running)
        return earliest(wake, self.armed_wake)

    async def run(self, stop: asyncio.Event) -> None:
        """Claim and run due deadlines until ``stop`` is set; then cancel runs in flight."""
        stopping = asyncio.create_task(stop.wait())
        self._stop = stop
        self.alive = True
        try:
            while not stop.is_set():
                self._poked.clear()
                await self._sleep(await self._tick_logged(), stopping)
        finally:
            self.alive = False
            stopping.cancel()
            await self._cancel_running()

    async def force(self, name: str) -> ForceResult:
        """Run ``name`` now if it is armed, due or not (shutdown: flush what is pending).

        Waits for a run of ``name`` already going in this process first."""
        purpose = self._purpose(name)
        if name in self._running:
            await asyncio.wait([self._running[name]])
        claimed = await self._store.claim(name, self._owner, self._clock.now(), purpose.lease,
                                          force=True)
        if claimed is None:
            return "idle"
        return "done" if await self._execute(purpose, claimed) else "failed"

    async def status(self) -> list[Deadline]:
        """Every stored deadline plus each registered purpose never armed, by name."""
        rows = {row.name: row for row in await self._store.list()}
        for name in self._purposes.keys() - rows.keys():
            rows[name] = Deadline(name)
        return [rows[name] for name in sorted(rows)]

    def _purpose(self, name: str) -> Purpose:
        try:
            return self._purposes[name]
        except KeyError:
            raise KeyError(f"no handler registered for deadline {name!r}") from None

    async def _tick(self) -> float | None:
        """One pass: start a run of every due, registered, claimable deadline; return
        the next wake time of the registered purposes."""
        rows = {row.name: row for row in await self._store.list() if row.name in self._purposes}
        now = self._clock.now()
        for row in due([r for r in rows.values() if r.name not in self._running], now):
            claimed = await self._store.claim(row.name, self._owner, now,
                                              self._purposes[row.name].lease)
            if claimed is not None:
                rows[row.name] = claimed
                self._start(claimed)
        return next_wake(rows.values())

    async def _tick_logged(self) -> float | None:
        """:meth:`_tick`; when the store fails, the time to try again."""
        try:
            wake = await self._tick()
        except Exception as error:
            self._store_failed("reading or claiming deadlines", error)
            return self._clock.now() + outage.retry_in(self._outage, self._max_sleep)
        self._store_answered()
        return wake

    def _start(self, claimed: Deadline) -> None:
        task = asyncio.create_task(self._execute(self._purposes[claimed.name], claimed))
        self._running[claimed.name] = task

        def finished(_: asyncio.Task[bool]) -> None:
            self._running.pop(claimed.name, None)
            self.poke()

        task.add_done_callback(finished)

    async def _execute(self, purpose: Purpose, claimed: Deadline) -> bool:
        """Run the handler and record the outcome; ``True`` when it succeeded."""
        name = claimed.name
        try:
            with self._handling(name):
                await purpose.handler(claimed)
        except asyncio.CancelledError:
            await self._record_failure(name, 0.0, STOPPED_ERROR)
            raise
        except RetryIn as retry:
            log.info("deadline %r: %s; trying again in %gs", name, retry, retry.delay)
            await self._record_failure(name, retry.delay, str(retry))
            return False
        except Exception as exc:
            log.exception("deadline %r: run failed; retrying in %ss", name, purpose.retry_delay)
            await self._record_failure(name, purpose.retry_delay, f"{type(exc).__name__}: {exc}")
            return False
        completed = await self._written(name, "completion", lambda: self._store.complete(
            name, self._owner, self._clock.now()))
        if completed is False:
            log.warning("deadline %r: claim lost before the run completed", name)
        return True

    @contextlib.contextmanager
    def _handling(self, name: str) -> Iterator[None]:
        """Mark ``name``'s handler as running: only then may stop cancel its task (never
        while the outcome is being recorded)."""
        self._in_handler.add(name)
        try:
            yield
        finally:
            self._in_handler.discard(name)

    async def _record_failure(self, name: str, retry_delay: float, error: str) -> None:
        """Record the failure, due ``retry_delay`` later; the store failing too, due at
        once (see the module invariants)."""
        try:
            await self._store.fail(name, self._owner, self._clock.now(), retry_delay, error)
        except Exception as failure:
            self._store_failed(f"recording the failure of deadline {name!r}", failure)
            await self._written(name, f"failure ({error})", lambda: self._store.fail(
                name, self._owner, self._clock.now(), 0.0, error))
            return
        self._store_answered()

    async def _written(self, name: str, what: str,
                       write: Callable[[], Awaitable[bool]]) -> bool | None:
        """``write()`` (a run's outcome) until the store answers, tried again while the
        ticker runs; the store's answer, or ``None`` when it never answered."""
        while True:
            try:
                answer = await write()
            except Exception as error:
                self._store_failed(f"recording the {what} of deadline {name!r}", error)
                if not self.alive or self._stop is None or self._stop.is_set():
                    log.warning("deadline %r: its %s was not recorded; it runs again once "
                                "its claim's lease ends", name, what)
                    return None
                await self._pause(outage.retry_in(self._outage, self._max_sleep), self._stop)
                continue
            self._store_answered()
            return answer

    async def _pause(self, seconds: float, stop: asyncio.Event) -> None:
        """``seconds`` on the clock, or until ``stop``."""
        sleeping = asyncio.create_task(self._clock.sleep(seconds))
        stopping = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait([sleeping, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeping.cancel()
            stopping.cancel()

    def _store_failed(self, doing: str, error: Exception) -> None:
        """Count a failure of the deadline store; log it as :mod:`stoker.resilience.outage` says."""
        self._outage, say = outage.failed(self._outage, self._clock.monotonic())
        if say:
            log.warning("deadline ticker: %s failed (%s: %s); trying again until the store "
                        "answers", doing, type(error).__name__, error)

    def _store_answered(self) -> None:
        self._outage, back = outage.answered(self._outage)
        if back:
            log.info("deadline ticker: the deadline store answers again")

    async def _sleep(self, wake_at: float | None, stopping: asyncio.Task[bool]) -> None:
        """Until ``wake_at`` (at most ``max_sleep``), a poke, or stop."""
        wait = self._max_sleep
        if wake_at is not None:
            wait = min(max(0.0, wake_at - self._clock.now()), self._max_sleep)
        if wait == 0.0:
            return
        sleeping = asyncio.create_task(self._clock.sleep(wait))
        poked = asyncio.create_task(self._poked.wait())
        try:
            await asyncio.wait([sleeping, poked, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeping, poked):
                task.cancel()

    async def _cancel_running(self) -> None:
        """Cancel the handlers still running, then wait until every outcome is recorded."""
        tasks = list(self._running.items())
        for name, task in tasks:
            if name in self._in_handler:
                task.cancel()
        for _, task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


def earliest(first: float | None, second: float | None) -> float | None:
    """The sooner of two wake times (``None``: no wake time).  Pure."""
    if first is None:
        return second
    return first if second is None else min(first, second)

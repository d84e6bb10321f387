"""The audit log through an outage of its store: records kept in order and written late.

An audit store (SQLite's or PostgreSQL's) that does not answer would lose the record of
every change made meanwhile: a purge still works while PostgreSQL is down (it is in
force on this node, and relayed once the database answers).  :class:`KeptAudit` stands
in front of the store: a record is made (stamped with the injected clock) and logged on
``stoker.audit`` once, then inserted; one the store refuses is kept, and a task writes
what is kept, oldest first, as soon as the store answers again.

Invariants:
- :meth:`KeptAudit.record` never raises for the store's sake and never waits longer than
  one insert: while anything is kept, a new record is kept behind it (so records reach
  the store in the order they were made), not tried.
- A kept record keeps the time it was made: written late, it still says when the change
  happened (its ``id`` then orders it after what other nodes wrote meanwhile).
- At most :data:`MOST` records are kept; past that the oldest is dropped, and each drop
  is an error line (never silent).  Retries and their log lines follow
  :mod:`stoker.resilience.outage` (waits doubling from 1 s to :data:`RETRY_MOST`): the first failure
  and the return are said once, and at most one line every ``SAY_EVERY`` seconds between.
- :meth:`KeptAudit.close` tries what is kept once more, logs an error naming how many
  records were never written, then closes the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Mapping
from typing import Any, Final, Protocol

from stoker.backends import audit_records
from stoker.backends.audit_records import Row
from stoker.clock import Clock
from stoker.resilience import outage

log = logging.getLogger("stoker.audit")

MOST: Final = 10_000
"""Most records kept while the store does not answer."""
RETRY_MOST: Final = 5.0
"""The longest wait between two tries to write what is kept."""


class AuditStore(Protocol):
    """What :class:`KeptAudit` needs of a store: both audit stores satisfy it."""

    async def append(self, values: Row) -> None: ...

    async def recent(self, limit: int = 100, *, action: str | None = None,
                     before: int | None = None) -> list[dict[str, Any]]: ...

    async def prune(self, before: float, keep: int) -> int: ...

    async def close(self) -> None: ...


class KeptAudit:
    """An :class:`~stoker.purge.audit.AuditTrail` over ``store`` that keeps what the store
    refuses and writes it late.  See the module docstring."""

    def __init__(self, store: AuditStore, clock: Clock, *, most: int = MOST) -> None:
        self._store = store
        self._clock = clock
        self._kept: deque[Row] = deque()
        self._most = most
        self._writer: asyncio.Task[None] | None = None

    def kept(self) -> int:
        """Records made but not in the store yet."""
        return len(self._kept)

    async def record(self, *, actor: str, action: str, target: Mapping[str, Any],
                     count: int | None, outcome: str) -> None:
        """Make one record, log it, and insert it (or keep it, see the module docstring)."""
        values = audit_records.row(self._clock.now(), actor=actor, action=action,
                                   target=target, count=count, outcome=outcome)
        audit_records.log_row(values)
        if not self._kept:
            try:
                await self._store.append(values)
                return
            except Exception as error:
                log.warning("the audit log did not take a record (%s: %s): kept, and "
                            "written once it answers", type(error).__name__, error)
        self._keep(values)

    async def recent(self, limit: int = 100, *, action: str | None = None,
                     before: int | None = None) -> list[dict[str, Any]]:
        """The store's newest records (those kept are not among them yet)."""
        return await self._store.recent(limit, action=action, before=before)

    async def prune(self, before: float, keep: int) -> int:
        """The store's :meth:`prune` (what is kept is not in the store yet)."""
        return await self._store.prune(before, keep)

    async def close(self) -> None:
        """Try what is kept once more, say what was never written, close the store."""
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
        with contextlib.suppress(Exception):
            await self._write_kept()
        if self._kept:
            log.error("stopping with %d audit records the audit log never took (they are "
                      "in this log, on stoker.audit, only)", len(self._kept))
        await self._store.close()

    def _keep(self, values: Row) -> None:
        if len(self._kept) >= self._most:
            dropped = self._kept.popleft()
            log.error("more than %d audit records waiting for the audit log: the oldest, "
                      "made at %s, is dropped", self._most, dropped[0])
        self._kept.append(values)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.ensure_future(self._write_late())

    async def _write_late(self) -> None:
        """Write what is kept, retrying as :mod:`stoker.resilience.outage` says, until none is."""
        state = outage.Outage()
        while self._kept:
            await self._clock.sleep(outage.retry_in(state, RETRY_MOST))
            try:
                await self._write_kept()
            except Exception as error:
                state, say = outage.failed(state, self._clock.monotonic())
                if say:
                    log.warning("the audit log still refuses records (%s: %s); %d kept, "
                                "trying again", type(error).__name__, error, len(self._kept))
        log.info("the audit log answers again: the records kept meanwhile are written")

    async def _write_kept(self) -> None:
        """Insert what is kept, oldest first; a failure leaves the rest kept, raised."""
        while self._kept:
            await self._store.append(self._kept[0])
            self._kept.popleft()

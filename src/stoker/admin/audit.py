"""What the admin listener and the ``PURGE`` method audit, and how often: the policy over
the audit trail.

The rows themselves are stored by the running Stoker's
:class:`~stoker.purge.audit.AuditTrail` (SQLite, ``data_dir/stoker.db``); one
:class:`RefusalAudit` (``Stoker.refusals``) takes the refused calls of both listeners.

Invariants:
- Every purge attempt and every refused admin call or ``PURGE`` (``outcome`` ``ok``,
  ``denied``, ``invalid`` or ``error``) is recorded, except refused calls
  beyond :data:`REFUSALS_PER_WINDOW` from one client within one
  :data:`WINDOW`: those are counted, and once the window has ended one
  summary row (``outcome`` ``suppressed``, ``count`` K, "K more refused calls
  suppressed") is written at the next admin request or audit prune, so a flood of
  refused calls adds at most ``REFUSALS_PER_WINDOW + 1`` rows (and as many
  ``stoker.audit`` lines, plus one warning) per client and window.
- At most :data:`MAX_CLIENTS` clients get windows of their own; refusals
  from further clients share one window (:data:`OTHER_CLIENTS`), so memory
  and rows stay bounded whatever the number of addresses.
- ``actor`` is ``anonymous``, ``token:<fingerprint>`` (see
  :func:`stoker.admin.auth.fingerprint`), ``purge-method:<address>`` or, on
  summary rows, ``client:<address>`` — never a token.
- Time is the injected clock's; writing a row never fails the call being
  audited (:func:`~stoker.purge.audit.record_safely`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from stoker.clock import Clock
from stoker.purge.audit import Auditor, record_safely

log = logging.getLogger("stoker.admin")

REFUSALS_PER_WINDOW = 10
WINDOW = 60.0
MAX_CLIENTS = 1024
OTHER_CLIENTS = "*"


@dataclass(frozen=True, slots=True)
class RefusalWindow:
    """The refused calls of one client since ``started``."""

    started: float
    recorded: int = 1
    suppressed: int = 0

    def ended(self, now: float, period: float) -> bool:
        """True once ``period`` has passed since the start (or the clock went back)."""
        return not self.started <= now < self.started + period


def admit_refusal(window: RefusalWindow | None, now: float, limit: int
                  ) -> tuple[RefusalWindow, bool]:
    """The client's window after one more refused call, and whether to record the call.

    ``window`` is the client's open window (``None`` when it has none).  Pure.
    """
    if window is None:
        return RefusalWindow(now), True
    if window.recorded < limit:
        return replace(window, recorded=window.recorded + 1), True
    return replace(window, suppressed=window.suppressed + 1), False


def summary_target(client: str, window: RefusalWindow) -> dict[str, Any]:
    """The ``target`` of the summary row of an ended window.  Pure."""
    return {"client": client, "since": window.started,
            "summary": f"{window.suppressed} more refused calls suppressed"}


class RefusalAudit:
    """Records refused admin calls through an :class:`Auditor`, rate-limited per client."""

    def __init__(self, audit: Auditor | None, clock: Clock, *,
                 limit: int = REFUSALS_PER_WINDOW, period: float = WINDOW,
                 max_clients: int = MAX_CLIENTS) -> None:
        self._audit = audit
        self._clock = clock
        self._limit = limit
        self._period = period
        self._max_clients = max_clients
        self._windows: dict[str, RefusalWindow] = {}

    async def refused(self, *, client: str, actor: str, action: str,
                      target: Mapping[str, Any]) -> None:
        """Audit one refused call from ``client`` (unless over the client's limit)."""
        await self.flush()
        now = self._clock.now()
        key = client if (client in self._windows
                         or len(self._windows) < self._max_clients) else OTHER_CLIENTS
        window, record = admit_refusal(self._windows.get(key), now, self._limit)
        self._windows[key] = window
        if record:
            await record_safely(self._audit, actor=actor, action=action,
                                target={**target, "client": client}, count=None,
                                outcome="denied")
        elif window.suppressed == 1:
            log.warning("more than %d refused calls (%s) from %s within %.0f s; counting the "
                        "rest without recording them until the window ends",
                        self._limit, action, key, self._period)

    async def flush(self) -> None:
        """Write the summary row of every ended window that suppressed calls; forget them."""
        now = self._clock.now()
        ended = [(key, window) for key, window in self._windows.items()
                 if window.ended(now, self._period)]
        for key, _ in ended:  # all at once, before any await: concurrent flushes never overlap
            del self._windows[key]
        for key, window in ended:
            if window.suppressed:
                await record_safely(self._audit, actor=f"client:{key}", action="refused calls",
                                    target=summary_target(key, window),
                                    count=window.suppressed, outcome="suppressed")

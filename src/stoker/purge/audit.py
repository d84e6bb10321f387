"""The audit ports: where purges, admin calls and refused calls are recorded.

Invariants: :func:`record_safely` never raises: a failure to record is logged (one error
line), so the answer to the call being audited stays what it was.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

log = logging.getLogger("stoker.purge")


class Auditor(Protocol):
    """Where purges and refused admin calls are recorded."""

    async def record(self, *, actor: str, action: str, target: Mapping[str, Any],
                     count: int | None, outcome: str) -> None: ...


class Refusals(Protocol):
    """Where refused calls are recorded, at a bounded rate per client (the admin side's
    ``RefusalAudit``: one policy for the admin listener and the ``PURGE`` method)."""

    async def refused(self, *, client: str, actor: str, action: str,
                      target: Mapping[str, Any]) -> None: ...


class AuditTrail(Auditor, Protocol):
    """An :class:`Auditor` that can be read back, pruned and closed: what a running Stoker
    holds (``stoker.backends.sqlite.audit_store.SqliteAuditStore``)."""

    async def recent(self, limit: int = 100, *, action: str | None = None,
                     before: int | None = None) -> list[dict[str, Any]]: ...

    async def prune(self, before: float, keep: int) -> int: ...

    async def close(self) -> None: ...


async def record_safely(audit: Auditor | None, *, actor: str, action: str,
                        target: Mapping[str, Any], count: int | None, outcome: str) -> None:
    """Record with ``audit`` (if any); a failure is logged (one error line), never raised,
    so the answer to the call being audited stays what it was."""
    if audit is None:
        return
    try:
        await audit.record(actor=actor, action=action, target=target, count=count,
                           outcome=outcome)
    except Exception as error:
        log.error("could not write the audit record of %s by %s (%s): %s: %s",
                  action, actor, outcome, type(error).__name__, error)

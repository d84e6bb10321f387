"""The ``DeadlineStore`` port and its data types, implemented by the SQLite and PostgreSQL backends.

Every backend passes the same contract suite (``tests/contract/test_deadline_store.py``).

A deadline is one persisted row per purpose (``name`` is the key: ``rewarm``,
``refresh``, ``stats_flush``, ``job_reap``, ``l2_reclaim``...). It is *armed*
while ``due_at`` is set, and *claimed* while ``owner`` is set; the claim is a
lease that ends at ``claimed_until``.

Invariants every implementation keeps:
- Each operation reads the row, applies the pure transition of
  ``stoker.schedule.deadlines`` and writes the result in one transaction that
  holds the row's write lock, so concurrent callers in any process or on any
  node see each other's writes: of several claims on one due deadline exactly
  one succeeds (compare-and-set).
- ``complete`` and ``fail`` change the row only while the caller still owns the
  claim; an ``arm`` that lands while a claim is held is kept by ``complete``
  (it asked for a run after the one in progress) and is never lost.
- Rows survive restarts: whatever was armed before is still armed after.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from typing import Any, Literal, Protocol

ArmMode = Literal["earliest", "debounced", "replace"]
"""How an arm combines with a deadline already pending:
``earliest`` keeps whichever is sooner (a burst fires once, ``delay`` after its first arm);
``debounced`` fires ``delay`` after the last arm but at most ``max_wait`` after the first;
``replace`` sets ``now + delay`` whatever was pending (an interval counted from now)."""

ARM_MODES: tuple[ArmMode, ...] = ("earliest", "debounced", "replace")

MAX_ERROR_CHARS = 2_000
"""A recorded failure message is cut to this many characters."""


@dataclass(frozen=True, slots=True)
class Deadline:
    """One purpose's persisted deadline (see the module docstring for the states)."""

    name: str
    due_at: float | None = None
    """When it should run; ``None``: not armed."""
    first_armed_at: float | None = None
    """When the pending burst of arms began (the debounce's ``max_wait`` counts from it)."""
    attempts: int = 0
    """Claims since it last completed (a failed or abandoned run counts)."""
    last_error: str | None = None
    """The last failure's message, cleared when a run completes."""
    owner: str | None = None
    """Who holds the claim; ``None``: unclaimed."""
    claimed_until: float | None = None
    """When the claim's lease ends (then another owner may claim it)."""
    rearmed: bool = False
    """Armed again while claimed: ``complete`` keeps the new due time."""
    completed_at: float | None = None
    """When a run last completed."""

    @property
    def armed(self) -> bool:
        return self.due_at is not None

    def held(self, now: float) -> bool:
        """A claim whose lease has not ended."""
        return self.owner is not None and (self.claimed_until or 0.0) > now


COLUMNS: tuple[str, ...] = tuple(field.name for field in fields(Deadline))
"""The ``deadlines`` table's columns, in :class:`Deadline` field order (both backends)."""


def deadline_from_row(row: Sequence[Any]) -> Deadline:
    """A row selected as :data:`COLUMNS` (SQLite's 0/1 ``rearmed`` becomes a bool)."""
    values = dict(zip(COLUMNS, row, strict=True))
    values["rearmed"] = bool(values["rearmed"])
    return Deadline(**values)


def deadline_values(deadline: Deadline) -> tuple[Any, ...]:
    """``deadline`` as values for :data:`COLUMNS`."""
    return astuple(deadline)


class DeadlineStore(Protocol):
    """Persisted deadlines, one row per purpose (see the module invariants)."""

    async def arm(self, name: str, mode: ArmMode, now: float, delay: float,
                  max_wait: float | None = None) -> Deadline:
        """Arm ``name`` to run ``delay`` seconds from ``now`` as ``mode`` says; return the row.

        ``max_wait`` is required for ``debounced`` and refused otherwise."""

    async def claim(self, name: str, owner: str, now: float, lease: float, *,
                    force: bool = False) -> Deadline | None:
        """Take ``name`` for ``lease`` seconds if it is due (within the slack) and not held
        by a live claim; ``force``: armed is enough. Return the claimed row, else ``None``."""

    async def complete(self, name: str, owner: str, now: float) -> bool:
        """The run ``owner`` claimed finished: disarm (unless re-armed meanwhile) and
        release. ``False`` (no change) when ``owner`` no longer holds the claim."""

    async def fail(self, name: str, owner: str, now: float, retry_delay: float,
                   error: str) -> bool:
        """The run failed: due again ``retry_delay`` from ``now`` (or sooner if re-armed
        meanwhile), ``error`` recorded, released. ``False`` when not held."""

    async def list(self) -> Sequence[Deadline]:
        """Every row, by name (for the status page)."""

    async def next_due(self) -> float | None:
        """When a ticker should next look: the earliest armed due time, or a held
        claim's lease end if later; ``None`` when nothing is armed."""

    async def aclose(self) -> None:
        """Release connections and threads."""


"""Job queue data: jobs, states, leases, new-job requests and requeue scopes.

Invariants:
- A job is in exactly one state: ``pending`` (waiting for ``run_at``),
  ``running`` (held under ``lease_token`` until ``lease_until``), ``done`` or
  ``dead`` (out of attempts, or failed permanently; only ``requeue`` revives it).
- ``attempts`` counts leases taken, so a job that keeps killing its worker
  still runs out of attempts.
- A ``Lease`` (job id + token) names one holding of one job; every ack is
  checked against it, so a holder whose lease was taken over cannot change
  the job any more.
- All timestamps are wall-clock epoch seconds from the injected ``Clock``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, cast

JobState: TypeAlias = Literal["pending", "running", "done", "dead"]
JOB_STATES: tuple[JobState, ...] = ("pending", "running", "done", "dead")
Payload: TypeAlias = dict[str, Any]

DEFAULT_MAX_ATTEMPTS = 5
MAX_ERROR_CHARS = 2_000
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


@dataclass(frozen=True, slots=True)
class Lease:
    """One holding of one job: acks must quote both parts."""

    job_id: int
    token: str


@dataclass(frozen=True, slots=True)
class Job:
    """A stored job, as read back from a backend."""

    id: int
    queue: str
    dedupe_key: str | None
    payload: Payload
    priority: int
    run_at: float
    attempts: int
    max_attempts: int
    state: JobState
    lease_owner: str | None
    lease_token: str | None
    lease_until: float | None
    last_error: str | None
    created_at: float
    updated_at: float

    @property
    def lease(self) -> Lease:
        """The lease this job is held under; only valid for a job returned by ``lease``."""
        if self.lease_token is None:
            raise ValueError(f"job {self.id} is not leased (state {self.state})")
        return Lease(self.id, self.lease_token)


@dataclass(frozen=True, slots=True)
class NewJob:
    """A job to enqueue. ``run_at=None`` means now; smaller ``priority`` runs first."""

    queue: str
    payload: Payload = field(default_factory=dict)
    dedupe_key: str | None = None
    priority: int = 0
    run_at: float | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS

    def __post_init__(self) -> None:
        if not self.queue:
            raise ValueError("a job needs a queue name")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")


@dataclass(frozen=True, slots=True)
class QueueCount:
    """How many jobs of one queue are in one state."""

    queue: str
    state: JobState
    count: int


RequeueKind: TypeAlias = Literal["id", "key", "payload", "all"]


@dataclass(frozen=True, slots=True)
class RequeueScope:
    """Which dead jobs to send back to ``pending``. Build with the class methods."""

    kind: RequeueKind
    job_ids: tuple[int, ...] = ()
    key: str | None = None
    field_name: str | None = None
    field_value: str | None = None
    confirmed: bool = False

    @classmethod
    def by_ids(cls, *job_ids: int) -> RequeueScope:
        if not job_ids:
            raise ValueError("requeue by id needs at least one job id")
        return cls("id", job_ids=tuple(job_ids))

    @classmethod
    def by_key(cls, key: str) -> RequeueScope:
        return cls("key", key=key)

    @classmethod
    def by_payload(cls, field_name: str, value: str | int) -> RequeueScope:
        """Dead jobs whose payload has ``field_name`` equal to ``value`` (compared as text)."""
        if not _FIELD_NAME.match(field_name):
            raise ValueError(f"payload field name {field_name!r} must be an identifier")
        return cls("payload", field_name=field_name, field_value=str(value))

    @classmethod
    def all(cls, *, confirm: bool) -> RequeueScope:
        """Every dead job; refused unless ``confirm`` is true."""
        if not confirm:
            raise ValueError("requeueing every dead job needs an explicit confirm")
        return cls("all", confirmed=True)


def truncate_error(error: str) -> str:
    """Errors are stored bounded so one huge traceback cannot bloat the table."""
    return error if len(error) <= MAX_ERROR_CHARS else error[: MAX_ERROR_CHARS - 1] + "…"


def job_from_row(row: Mapping[str, Any]) -> Job:
    """Build a ``Job`` from a backend row (sqlite3.Row or asyncpg Record)."""
    payload = row["payload"]
    state = row["state"]
    if state not in JOB_STATES:
        raise ValueError(f"job {row['id']} has unknown state {state!r}")
    return Job(
        id=int(row["id"]),
        queue=row["queue"],
        dedupe_key=row["dedupe_key"],
        payload=json.loads(payload) if isinstance(payload, str | bytes) else dict(payload),
        priority=int(row["priority"]),
        run_at=float(row["run_at"]),
        attempts=int(row["attempts"]),
        max_attempts=int(row["max_attempts"]),
        state=cast(JobState, state),
        lease_owner=row["lease_owner"],
        lease_token=row["lease_token"],
        lease_until=None if row["lease_until"] is None else float(row["lease_until"]),
        last_error=row["last_error"],
        created_at=float(row["created_at"]),
        updated_at=float(row["updated_at"]),
    )


def payload_json(payload: Payload) -> str:
    """The canonical stored form of a payload."""
    return json.dumps(payload, separators=(",", ":"), sort_keys=True)


def payload_path(field_name: str) -> str:
    """SQLite JSON path of a validated top-level payload field."""
    return f'$."{field_name}"'


EXPIRED_ERROR = "lease expired during the final attempt (worker died or hung)"

"""SQL of the SQLite job queue (see ``stoker.jobs.queue`` for the invariants it keeps).

Every statement is a constant; the requeue variants are fixed at import time
from fixed fragments, one per scope kind, never from input.
"""

from __future__ import annotations

from typing import Final

from stoker.jobs.model import RequeueKind

# A duplicate of a pending key is dropped; a duplicate of a running key asks for
# one follow-up run (the rerun flag; migration 0002 enqueues it when the run ends).
# Each row counts in ``total_changes`` when it inserted a job or newly set the flag.
INSERT: Final = """
INSERT INTO jobs (queue, dedupe_key, payload, priority, run_at, max_attempts,
                  created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (queue, dedupe_key) WHERE state IN ('pending', 'running') AND dedupe_key IS NOT NULL
DO UPDATE SET rerun = 1 WHERE state = 'running' AND rerun = 0
"""

# Expired running jobs (reclaimed first, keeping a requested rerun), then due
# pending jobs; a reclaimed job already out of attempts is buried instead of leased.
_OUT_OF_ATTEMPTS = "(state = 'running' AND attempts >= max_attempts)"
LEASE: Final = f"""
UPDATE jobs SET
    state = CASE WHEN {_OUT_OF_ATTEMPTS} THEN 'dead' ELSE 'running' END,
    last_error = CASE WHEN {_OUT_OF_ATTEMPTS} THEN :expired_error ELSE last_error END,
    attempts = CASE WHEN {_OUT_OF_ATTEMPTS} THEN attempts ELSE attempts + 1 END,
    lease_owner = CASE WHEN {_OUT_OF_ATTEMPTS} THEN lease_owner ELSE :owner END,
    lease_token = CASE WHEN {_OUT_OF_ATTEMPTS} THEN NULL ELSE lower(hex(randomblob(16))) END,
    lease_until = CASE WHEN {_OUT_OF_ATTEMPTS} THEN NULL ELSE :until END,
    rerun = CASE WHEN {_OUT_OF_ATTEMPTS} THEN 0 ELSE rerun END,
    updated_at = :now
WHERE id IN (
    SELECT id FROM (
        SELECT id FROM jobs
        WHERE queue = :queue AND state = 'running' AND lease_until < :now
        ORDER BY lease_until LIMIT :n)
    UNION ALL
    SELECT id FROM (
        SELECT id FROM jobs
        WHERE queue = :queue AND state = 'pending' AND run_at <= :now
        ORDER BY priority, run_at, id LIMIT :n)
    LIMIT :n)
RETURNING *
"""

_HELD = "id = :id AND lease_token = :token AND state = 'running'"

HEARTBEAT: Final = f"UPDATE jobs SET lease_until = :until WHERE {_HELD}"

ACK_DONE: Final = f"""
UPDATE jobs SET state = 'done', lease_token = NULL, lease_until = NULL, rerun = 0,
    updated_at = :now
WHERE {_HELD}
"""

ATTEMPTS_OF: Final = f"SELECT attempts, max_attempts FROM jobs WHERE {_HELD}"

APPLY_FAILURE: Final = f"""
UPDATE jobs SET state = :state, run_at = :run_at, last_error = :error,
    lease_token = NULL, lease_until = NULL, rerun = 0, updated_at = :now
WHERE {_HELD}
"""

RELEASE: Final = f"""
UPDATE jobs SET state = 'pending', attempts = max(attempts - 1, 0), lease_owner = NULL,
    lease_token = NULL, lease_until = NULL, rerun = 0, updated_at = :now
WHERE {_HELD}
"""

_REQUEUE_TEMPLATE = """
UPDATE jobs SET state = 'pending', attempts = 0, run_at = :now, lease_owner = NULL,
    lease_token = NULL, lease_until = NULL, updated_at = :now
WHERE id IN (
    SELECT max(d.id) FROM jobs AS d
    WHERE d.state = 'dead' AND ({scope})
      AND NOT EXISTS (
          SELECT 1 FROM jobs AS live
          WHERE live.queue = d.queue AND live.dedupe_key = d.dedupe_key
            AND live.state IN ('pending', 'running'))
    GROUP BY d.queue, d.dedupe_key, CASE WHEN d.dedupe_key IS NULL THEN d.id END)
"""

_SCOPES: dict[RequeueKind, str] = {
    "id": "d.id IN (SELECT value FROM json_each(:ids))",
    "key": "d.dedupe_key = :key",
    "payload": "CAST(json_extract(d.payload, :path) AS TEXT) = :value",
    "all": "1 = 1",
}
REQUEUE: Final[dict[RequeueKind, str]] = {
    kind: _REQUEUE_TEMPLATE.format(scope=scope) for kind, scope in _SCOPES.items()
}

REAP: Final = "DELETE FROM jobs WHERE state = 'done' AND updated_at < :before"

COUNTS: Final = """
SELECT queue, state, count(*) AS n FROM jobs GROUP BY queue, state ORDER BY queue, state
"""

LIST: Final = """
SELECT * FROM jobs WHERE state = :state
ORDER BY updated_at DESC, id DESC LIMIT :limit OFFSET :offset
"""

GET: Final = "SELECT * FROM jobs WHERE id = :id"

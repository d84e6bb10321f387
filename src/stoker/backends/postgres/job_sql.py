"""SQL of the PostgreSQL job queue (see ``stoker.jobs.queue`` for the invariants it keeps).

Every statement is a constant (asyncpg prepares and caches each per
connection); the requeue variants are fixed at import time from fixed
fragments, one per scope kind, never from input. Batches travel as arrays
(``unnest``) so a batch costs one round trip.
"""

from __future__ import annotations

from typing import Final

from stoker.jobs.model import RequeueKind

CHANNEL: Final = "stoker_jobs"

# Inserts in input order (ids follow it: FIFO); a duplicate of a pending key is
# dropped, a duplicate of a running key asks for one follow-up run (the rerun flag;
# migration 0002 enqueues it when the run ends); within one batch only the first
# job of a key counts (ON CONFLICT DO UPDATE may touch a row once per statement).
# ``added`` counts jobs inserted plus reruns newly requested; each queue that got
# any is notified. One statement, one transaction.
INSERT: Final = """
WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::float8[], $6::int[])
        WITH ORDINALITY AS t(queue, dedupe_key, payload, priority, run_at, max_attempts, ord)
), ranked AS (
    SELECT *, row_number() OVER (PARTITION BY queue, dedupe_key ORDER BY ord) AS nth
    FROM input
), inserted AS (
    INSERT INTO jobs (queue, dedupe_key, payload, priority, run_at, max_attempts,
                      created_at, updated_at)
    SELECT queue, dedupe_key, payload::jsonb, priority, run_at, max_attempts, $7, $7
    FROM ranked WHERE dedupe_key IS NULL OR nth = 1 ORDER BY ord
    ON CONFLICT (queue, dedupe_key)
        WHERE state IN ('pending', 'running') AND dedupe_key IS NOT NULL
    DO UPDATE SET rerun = TRUE WHERE jobs.state = 'running' AND NOT jobs.rerun
    RETURNING queue
)
SELECT queue, count(*)::int AS added, pg_notify($8, queue)::text AS notified
FROM inserted GROUP BY queue
"""

# Expired running jobs (reclaimed first), then due pending jobs, each locked with
# SKIP LOCKED so concurrent lessees never pick the same row (a reclaimed job keeps
# a requested rerun); a reclaimed job
# already out of attempts is buried instead of leased. $1 queue, $2 n, $3 now,
# $4 owner, $5 lease_until, $6 error for buried jobs.
_OUT = "(j.state = 'running' AND j.attempts >= j.max_attempts)"
LEASE: Final = f"""
WITH expired AS (
    SELECT id FROM jobs
    WHERE queue = $1 AND state = 'running' AND lease_until < $3::float8
    ORDER BY lease_until LIMIT $2::int
    FOR UPDATE SKIP LOCKED
), due AS (
    SELECT id FROM jobs
    WHERE queue = $1 AND state = 'pending' AND run_at <= $3::float8
    ORDER BY priority, run_at, id LIMIT $2::int
    FOR UPDATE SKIP LOCKED
), picked AS (
    SELECT id FROM expired UNION ALL SELECT id FROM due LIMIT $2::int
)
UPDATE jobs AS j SET
    state = CASE WHEN {_OUT} THEN 'dead' ELSE 'running' END,
    last_error = CASE WHEN {_OUT} THEN $6::text ELSE j.last_error END,
    attempts = CASE WHEN {_OUT} THEN j.attempts ELSE j.attempts + 1 END,
    lease_owner = CASE WHEN {_OUT} THEN j.lease_owner ELSE $4::text END,
    lease_token = CASE WHEN {_OUT} THEN NULL ELSE gen_random_uuid()::text END,
    lease_until = CASE WHEN {_OUT} THEN NULL ELSE $5::float8 END,
    rerun = CASE WHEN {_OUT} THEN FALSE ELSE j.rerun END,
    updated_at = $3
FROM picked WHERE j.id = picked.id
RETURNING j.*
"""

# Lease-guarded batch updates: $1 ids, $2 tokens (pairwise), $3 time.
_HELD_BATCH = """
FROM unnest($1::bigint[], $2::text[]) AS l(id, token)
WHERE j.id = l.id AND j.lease_token = l.token AND j.state = 'running'
RETURNING j.id
"""
HEARTBEAT: Final = "UPDATE jobs AS j SET lease_until = $3" + _HELD_BATCH
ACK_DONE: Final = (
    "UPDATE jobs AS j SET state = 'done', lease_token = NULL, lease_until = NULL,"
    " rerun = FALSE, updated_at = $3" + _HELD_BATCH
)

_HELD = "id = $1 AND lease_token = $2 AND state = 'running'"
ATTEMPTS_OF: Final = f"SELECT attempts, max_attempts FROM jobs WHERE {_HELD}"
APPLY_FAILURE: Final = f"""
UPDATE jobs SET state = $3, run_at = $4, last_error = $5,
    lease_token = NULL, lease_until = NULL, rerun = FALSE, updated_at = $6
WHERE {_HELD} RETURNING id
"""
RELEASE: Final = f"""
UPDATE jobs SET state = 'pending', attempts = GREATEST(attempts - 1, 0), lease_owner = NULL,
    lease_token = NULL, lease_until = NULL, rerun = FALSE, updated_at = $3
WHERE {_HELD} RETURNING id
"""

# $1 now, $2 channel, then the scope's own parameters.
_REQUEUE_TEMPLATE = """
WITH revived AS (
    UPDATE jobs SET state = 'pending', attempts = 0, run_at = $1, lease_owner = NULL,
        lease_token = NULL, lease_until = NULL, updated_at = $1
    WHERE id IN (
        SELECT DISTINCT ON (d.queue, d.dedupe_key, CASE WHEN d.dedupe_key IS NULL THEN d.id END)
            d.id
        FROM jobs AS d
        WHERE d.state = 'dead' AND ({scope})
          AND NOT EXISTS (
              SELECT 1 FROM jobs AS live
              WHERE live.queue = d.queue AND live.dedupe_key = d.dedupe_key
                AND live.state IN ('pending', 'running'))
        ORDER BY d.queue, d.dedupe_key, CASE WHEN d.dedupe_key IS NULL THEN d.id END,
                 d.id DESC)
    RETURNING queue
)
SELECT queue, count(*)::int AS added, pg_notify($2, queue)::text AS notified
FROM revived GROUP BY queue
"""
_SCOPES: dict[RequeueKind, str] = {
    "id": "d.id = ANY($3::bigint[])",
    "key": "d.dedupe_key = $3::text",
    "payload": "d.payload ->> $3::text = $4::text",
    "all": "TRUE",
}
REQUEUE: Final[dict[RequeueKind, str]] = {
    kind: _REQUEUE_TEMPLATE.format(scope=scope) for kind, scope in _SCOPES.items()
}

REAP: Final = "DELETE FROM jobs WHERE state = 'done' AND updated_at < $1"

COUNTS: Final = """
SELECT queue, state, count(*)::int AS n FROM jobs GROUP BY queue, state ORDER BY queue, state
"""

LIST: Final = """
SELECT * FROM jobs WHERE state = $1 ORDER BY updated_at DESC, id DESC LIMIT $2 OFFSET $3
"""

GET: Final = "SELECT * FROM jobs WHERE id = $1"

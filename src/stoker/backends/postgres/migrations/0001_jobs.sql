-- Durable job queue. Timestamps are epoch seconds from the injected clock,
-- so a fake clock drives PostgreSQL exactly as it drives SQLite.
CREATE TABLE jobs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue TEXT NOT NULL,
    dedupe_key TEXT,
    payload JSONB NOT NULL DEFAULT '{}',
    priority INTEGER NOT NULL DEFAULT 0,
    run_at DOUBLE PRECISION NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 5 CHECK (max_attempts >= 1),
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'running', 'done', 'dead')),
    lease_owner TEXT,
    lease_token TEXT,
    lease_until DOUBLE PRECISION,
    last_error TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);

-- One in-flight job per (queue, dedupe key): INSERT ... ON CONFLICT DO NOTHING.
CREATE UNIQUE INDEX jobs_inflight_key_idx ON jobs (queue, dedupe_key)
    WHERE state IN ('pending', 'running') AND dedupe_key IS NOT NULL;

-- lease: due pending jobs in (priority, run_at, id) order.
CREATE INDEX jobs_pending_idx ON jobs (queue, priority, run_at, id)
    WHERE state = 'pending';

-- lease: expired running jobs to reclaim.
CREATE INDEX jobs_running_idx ON jobs (queue, lease_until)
    WHERE state = 'running';

-- list(state, limit, offset), newest first, and reap of old done jobs.
CREATE INDEX jobs_state_updated_idx ON jobs (state, updated_at DESC, id DESC);

-- counts(): by queue and state.
CREATE INDEX jobs_queue_state_idx ON jobs (queue, state);

-- requeue by key: dead rows only.
CREATE INDEX jobs_dead_key_idx ON jobs (dedupe_key) WHERE state = 'dead';

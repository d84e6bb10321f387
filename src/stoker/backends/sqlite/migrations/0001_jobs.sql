-- Durable job queue. Timestamps are epoch seconds from the injected clock.
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    queue TEXT NOT NULL,
    dedupe_key TEXT,
    payload TEXT NOT NULL DEFAULT '{}',
    priority INTEGER NOT NULL DEFAULT 0,
    run_at REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 5 CHECK (max_attempts >= 1),
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'running', 'done', 'dead')),
    lease_owner TEXT,
    lease_token TEXT,
    lease_until REAL,
    last_error TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);

-- One in-flight job per (queue, dedupe key): the slot frees when the job leaves it.
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

-- Enqueue while running: a duplicate enqueued while its key is 'running' sets the
-- running row's rerun flag (set only on running rows, so several duplicates ask
-- for one follow-up). When that row leaves 'running' for good ('done' or 'dead'),
-- the trigger enqueues the follow-up: the same job as a fresh pending row, due at
-- once. Every statement that moves a row out of 'running' clears the flag.
ALTER TABLE jobs ADD COLUMN rerun INTEGER NOT NULL DEFAULT 0
    CHECK (rerun IN (0, 1) AND (rerun = 0 OR state = 'running'));

CREATE TRIGGER jobs_rerun_after_finish AFTER UPDATE OF state ON jobs
WHEN OLD.state = 'running' AND NEW.state IN ('done', 'dead') AND OLD.rerun = 1
BEGIN
    INSERT OR IGNORE INTO jobs (queue, dedupe_key, payload, priority, run_at, max_attempts,
                                created_at, updated_at)
    VALUES (NEW.queue, NEW.dedupe_key, NEW.payload, NEW.priority, NEW.updated_at,
            NEW.max_attempts, NEW.updated_at, NEW.updated_at);
END;

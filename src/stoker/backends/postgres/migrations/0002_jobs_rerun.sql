-- Enqueue while running: a duplicate enqueued while its key is 'running' sets the
-- running row's rerun flag (set only on running rows, so several duplicates ask
-- for one follow-up). When that row leaves 'running' for good ('done' or 'dead'),
-- the trigger enqueues the follow-up: the same job as a fresh pending row, due at
-- once, and notifies its queue (channel 'stoker_jobs', job_sql.CHANNEL). Every
-- statement that moves a row out of 'running' clears the flag.
ALTER TABLE jobs
    ADD COLUMN rerun BOOLEAN NOT NULL DEFAULT FALSE,
    ADD CONSTRAINT jobs_rerun_only_running CHECK (NOT rerun OR state = 'running');

CREATE FUNCTION jobs_enqueue_rerun() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO jobs (queue, dedupe_key, payload, priority, run_at, max_attempts,
                      created_at, updated_at)
    VALUES (NEW.queue, NEW.dedupe_key, NEW.payload, NEW.priority, NEW.updated_at,
            NEW.max_attempts, NEW.updated_at, NEW.updated_at)
    ON CONFLICT DO NOTHING;
    PERFORM pg_notify('stoker_jobs', NEW.queue);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_rerun_after_finish AFTER UPDATE OF state ON jobs
FOR EACH ROW WHEN (OLD.state = 'running' AND NEW.state IN ('done', 'dead') AND OLD.rerun)
EXECUTE FUNCTION jobs_enqueue_rerun();

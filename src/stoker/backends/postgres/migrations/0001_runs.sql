-- Warm runs (stoker.warm.run). Timestamps are epoch seconds from the injected clock.
-- The defaults describe a new manual full run.
CREATE TABLE warm_runs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    reason TEXT NOT NULL DEFAULT 'manual'
        CHECK (reason IN ('manual', 'purge', 'edit', 'deploy', 'daily')),
    scope TEXT NOT NULL DEFAULT 'site' CHECK (scope IN ('site', 'urls')),
    phase TEXT NOT NULL DEFAULT 'collect'
        CHECK (phase IN ('collect', 'warm', 'done', 'failed', 'cancelled')),
    started_at DOUBLE PRECISION NOT NULL,
    total INTEGER NOT NULL DEFAULT 0,
    warmed INTEGER NOT NULL DEFAULT 0,
    not_modified INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    stopgap_pending INTEGER NOT NULL DEFAULT 0,
    rewarmed INTEGER NOT NULL DEFAULT 0,
    gave_up INTEGER NOT NULL DEFAULT 0,
    skipped INTEGER NOT NULL DEFAULT 0,
    finished_at DOUBLE PRECISION,
    error TEXT,
    collect_owner TEXT,
    collect_claimed_at DOUBLE PRECISION
);

-- At most one run is active (collecting or warming).
CREATE UNIQUE INDEX warm_runs_one_active_idx ON warm_runs ((phase IN ('collect', 'warm')))
    WHERE phase IN ('collect', 'warm');

-- One row per URL of a run: its state and the number its next visit must carry.
CREATE TABLE warm_run_urls (
    run_id BIGINT NOT NULL,
    url TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN
        ('queued', 'stopgap', 'warmed', 'not_modified', 'failed', 'rewarmed', 'gave_up')),
    visit INTEGER NOT NULL DEFAULT 0,
    revisits INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, url)
);

-- urls(run, state): e.g. the failed URLs of a run.
CREATE INDEX warm_run_urls_state_idx ON warm_run_urls (run_id, state, url);

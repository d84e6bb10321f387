-- recovery (stoker.warm.recovery): a targeted run of the URLs that failed while the
-- origin was down, started once it answers again.  SQLite cannot alter a CHECK
-- constraint: warm_runs is rebuilt, its rows copied (ids kept).
CREATE TABLE warm_runs_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    reason TEXT NOT NULL DEFAULT 'manual'
        CHECK (reason IN ('manual', 'purge', 'edit', 'deploy', 'daily', 'recovery')),
    scope TEXT NOT NULL DEFAULT 'site' CHECK (scope IN ('site', 'urls')),
    phase TEXT NOT NULL DEFAULT 'collect'
        CHECK (phase IN ('collect', 'warm', 'done', 'failed', 'cancelled')),
    started_at REAL NOT NULL,
    total INTEGER NOT NULL DEFAULT 0,
    warmed INTEGER NOT NULL DEFAULT 0,
    not_modified INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    stopgap_pending INTEGER NOT NULL DEFAULT 0,
    rewarmed INTEGER NOT NULL DEFAULT 0,
    gave_up INTEGER NOT NULL DEFAULT 0,
    skipped INTEGER NOT NULL DEFAULT 0,
    finished_at REAL,
    error TEXT,
    collect_owner TEXT,
    collect_claimed_at REAL,
    not_stored INTEGER NOT NULL DEFAULT 0
);

INSERT INTO warm_runs_new SELECT id, reason, scope, phase, started_at, total, warmed,
    not_modified, failed, stopgap_pending, rewarmed, gave_up, skipped, finished_at, error,
    collect_owner, collect_claimed_at, not_stored FROM warm_runs;

DROP TABLE warm_runs;

ALTER TABLE warm_runs_new RENAME TO warm_runs;

-- At most one run is active (collecting or warming); dropped with the old table.
CREATE UNIQUE INDEX warm_runs_one_active_idx ON warm_runs ((phase IN ('collect', 'warm')))
    WHERE phase IN ('collect', 'warm');

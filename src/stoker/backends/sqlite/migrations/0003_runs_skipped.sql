-- Why discovery left URLs out of a full run (stoker.warm.discovery: feed, admin, file,
-- query, other_host, over_cap, ...): one row per reason, its count. warm_runs.skipped
-- stays their sum.
CREATE TABLE warm_run_skipped (
    run_id INTEGER NOT NULL,
    reason TEXT NOT NULL,
    count INTEGER NOT NULL CHECK (count > 0),
    PRIMARY KEY (run_id, reason)
) WITHOUT ROWID;

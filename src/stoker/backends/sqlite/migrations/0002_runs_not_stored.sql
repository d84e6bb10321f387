-- not_stored (stoker.warm.run): a URL whose page the cache does not store (it sets a
-- cookie, is private, ...) settles as not_stored, tallied in warm_runs.not_stored;
-- warm_run_urls.detail keeps why (or what failed, for a failed URL).
ALTER TABLE warm_runs ADD COLUMN not_stored INTEGER NOT NULL DEFAULT 0;

-- SQLite cannot alter a CHECK constraint: warm_run_urls is rebuilt, its rows copied.
CREATE TABLE warm_run_urls_new (
    run_id INTEGER NOT NULL,
    url TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN
        ('queued', 'stopgap', 'warmed', 'not_modified', 'not_stored', 'failed', 'rewarmed',
         'gave_up')),
    visit INTEGER NOT NULL DEFAULT 0,
    revisits INTEGER NOT NULL DEFAULT 0,
    detail TEXT,
    PRIMARY KEY (run_id, url)
) WITHOUT ROWID;

INSERT INTO warm_run_urls_new (run_id, url, state, visit, revisits)
    SELECT run_id, url, state, visit, revisits FROM warm_run_urls;

DROP TABLE warm_run_urls;

ALTER TABLE warm_run_urls_new RENAME TO warm_run_urls;

-- urls(run, state): e.g. the failed URLs of a run (dropped with the old table).
CREATE INDEX warm_run_urls_state_idx ON warm_run_urls (run_id, state, url);

-- not_stored (stoker.warm.run): a URL whose page the cache does not store (it sets a
-- cookie, is private, ...) settles as not_stored, tallied in warm_runs.not_stored;
-- warm_run_urls.detail keeps why (or what failed, for a failed URL).
ALTER TABLE warm_runs ADD COLUMN not_stored INTEGER NOT NULL DEFAULT 0;

ALTER TABLE warm_run_urls ADD COLUMN detail TEXT;

ALTER TABLE warm_run_urls DROP CONSTRAINT warm_run_urls_state_check;

ALTER TABLE warm_run_urls ADD CONSTRAINT warm_run_urls_state_check CHECK (state IN
    ('queued', 'stopgap', 'warmed', 'not_modified', 'not_stored', 'failed', 'rewarmed',
     'gave_up'));

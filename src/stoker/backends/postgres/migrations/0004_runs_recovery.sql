-- recovery (stoker.warm.recovery): a targeted run of the URLs that failed while the
-- origin was down, started once it answers again.
ALTER TABLE warm_runs DROP CONSTRAINT warm_runs_reason_check;

ALTER TABLE warm_runs ADD CONSTRAINT warm_runs_reason_check
    CHECK (reason IN ('manual', 'purge', 'edit', 'deploy', 'daily', 'recovery'));

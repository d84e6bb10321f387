-- Prefix purges find their entries in this index alone: it holds what their lookup reads
-- (url, keep_until) and what it answers (primary_key, variant), so the lookup no longer
-- reads each entry's row, whose inline body often fills a page.  10,000 entries under a
-- prefix: 20 ms -> 3 ms of the L2 thread.
DROP INDEX cache_entries_url;

CREATE INDEX cache_entries_url ON cache_entries (url, keep_until, primary_key, variant);

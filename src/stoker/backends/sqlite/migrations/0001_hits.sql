-- Hit statistics: visit sums per URL, incremented by every flush of the
-- proxy's in-memory counters (stoker.cache.hits). last_seen is epoch seconds
-- from the injected clock.
CREATE TABLE hit_stats (
    url TEXT PRIMARY KEY,
    hits INTEGER NOT NULL DEFAULT 0 CHECK (hits >= 0),
    misses INTEGER NOT NULL DEFAULT 0 CHECK (misses >= 0),
    visits INTEGER GENERATED ALWAYS AS (hits + misses) STORED,
    last_seen REAL NOT NULL
);

-- top(): most visited first.
CREATE INDEX hit_stats_visits_idx ON hit_stats (visits DESC, url);

-- prune(): URLs not seen for a while.
CREATE INDEX hit_stats_last_seen_idx ON hit_stats (last_seen);

-- Fetch leases (component "bus"): the process fetching a key from the origin for the
-- processes sharing cache.db, so that the others wait for its entry instead of fetching.
CREATE TABLE fetch_leases (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires REAL NOT NULL
);

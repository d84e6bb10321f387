-- Fetch leases (component "bus"): the member fetching a key from the origin for the nodes
-- sharing one cache, so that the others wait for its entry instead of fetching
-- (stoker.backends.postgres.fetch_leases). expires is epoch seconds.
CREATE TABLE fetch_leases (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires DOUBLE PRECISION NOT NULL
);

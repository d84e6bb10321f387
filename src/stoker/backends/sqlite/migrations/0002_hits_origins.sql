-- The origins (scheme://host) visitors' requests arrive on, summed by every flush
-- (stoker.warm.origins); '' counts the hosts that are not the site's. The store keeps
-- the most visited few rows. last_seen is epoch seconds from the injected clock.
CREATE TABLE seen_origins (
    origin TEXT PRIMARY KEY,
    visits INTEGER NOT NULL DEFAULT 0 CHECK (visits >= 0),
    last_seen REAL NOT NULL
);

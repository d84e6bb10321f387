-- The origins (scheme://host) visitors' requests arrive on, summed by every flush on
-- any node (stoker.warm.origins); '' counts the hosts that are not the site's. The
-- store keeps the most visited few rows. last_seen is epoch seconds from the clock.
CREATE TABLE seen_origins (
    origin TEXT COLLATE "C" PRIMARY KEY,
    visits BIGINT NOT NULL DEFAULT 0 CHECK (visits >= 0),
    last_seen DOUBLE PRECISION NOT NULL
);

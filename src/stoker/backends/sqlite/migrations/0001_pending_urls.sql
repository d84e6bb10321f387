-- Purged URLs waiting for their debounced re-warm (stoker.warm.pending).
CREATE TABLE warm_pending (
    url TEXT PRIMARY KEY,
    added_at REAL NOT NULL
);

CREATE INDEX warm_pending_added ON warm_pending (added_at, url);

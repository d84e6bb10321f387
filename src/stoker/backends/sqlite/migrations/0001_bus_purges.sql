-- The purge bus (component "bus"): purges relayed between the processes sharing cache.db,
-- and each process's confirmed number.
CREATE TABLE purge_bus (
    number INTEGER PRIMARY KEY AUTOINCREMENT,
    sender TEXT NOT NULL,
    published_at REAL NOT NULL,
    purged_at REAL NOT NULL,
    soft INTEGER NOT NULL,
    keys TEXT NOT NULL,
    prefixes TEXT NOT NULL,
    tags TEXT NOT NULL,
    everything INTEGER NOT NULL,
    version TEXT
);
CREATE TABLE purge_members (
    name TEXT PRIMARY KEY,
    confirmed INTEGER NOT NULL,
    seen_at REAL NOT NULL
);

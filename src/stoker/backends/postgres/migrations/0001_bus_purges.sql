-- The purge bus (component "bus"): purges relayed between the nodes sharing one cache, and
-- each member's confirmed number (stoker.backends.postgres.purge_bus). Times are epoch
-- seconds; keys, prefixes and tags are JSON arrays of strings as text (jsonb would refuse
-- the \u0000 an admin-given prefix may hold).
CREATE TABLE purge_bus (
    number BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sender TEXT NOT NULL,
    published_at DOUBLE PRECISION NOT NULL,
    purged_at DOUBLE PRECISION NOT NULL,
    soft BOOLEAN NOT NULL,
    keys TEXT NOT NULL,
    prefixes TEXT NOT NULL,
    tags TEXT NOT NULL,
    everything BOOLEAN NOT NULL,
    version TEXT
);

-- trim(): rows published before a time.
CREATE INDEX purge_bus_published_at_idx ON purge_bus (published_at);

CREATE TABLE purge_members (
    name TEXT PRIMARY KEY,
    confirmed BIGINT NOT NULL,
    seen_at DOUBLE PRECISION NOT NULL
);

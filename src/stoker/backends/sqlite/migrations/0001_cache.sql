-- L2 cache tier: one row per (primary_key, variant), see backends/sqlite/cache_store.py.
CREATE TABLE cache_entries (
    primary_key TEXT NOT NULL,
    variant TEXT NOT NULL,
    url TEXT NOT NULL,
    status INTEGER NOT NULL,
    headers BLOB NOT NULL,
    body BLOB,
    body_file TEXT,
    body_size INTEGER NOT NULL,
    response_time REAL NOT NULL,
    initial_age REAL NOT NULL,
    fresh_until REAL NOT NULL,
    stale_until REAL NOT NULL,
    error_until REAL NOT NULL,
    keep_until REAL NOT NULL,
    vary TEXT NOT NULL,
    tags TEXT NOT NULL,
    etag TEXT,
    last_modified TEXT,
    stored_at REAL NOT NULL,
    extra TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    PRIMARY KEY (primary_key, variant)
);

CREATE INDEX cache_entries_url ON cache_entries (url);

CREATE INDEX cache_entries_keep_until ON cache_entries (keep_until);

CREATE INDEX cache_entries_stored_at ON cache_entries (stored_at);

CREATE TABLE cache_tags (
    tag TEXT NOT NULL,
    primary_key TEXT NOT NULL,
    variant TEXT NOT NULL,
    PRIMARY KEY (tag, primary_key, variant),
    FOREIGN KEY (primary_key, variant)
        REFERENCES cache_entries (primary_key, variant) ON DELETE CASCADE
);

CREATE INDEX cache_tags_entry ON cache_tags (primary_key, variant);

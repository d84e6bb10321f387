-- An entry's fields that never change while its row exists go into ONE column, record
-- (backends/sqlite/entry_rows.py), with the identity form's HTTP/1.1 head: an L2 hit reads
-- 7 columns instead of 23 and decodes them in C.  encoded takes the same encoding.  The
-- table is rebuilt (one copy of every row: the first start after the upgrade takes about
-- as long as copying the database), and so is cache_tags, whose foreign key names it.
-- stoker_entry_record() and stoker_entry_codings() convert the old columns
-- (migrations/__init__.py); a row they cannot read gets a NULL record, which a read
-- reports as corrupt (a miss) until it is replaced or evicted.  The body comes last: a
-- column after it is read through the body's overflow pages.
CREATE TABLE cache_entries_v6 (
    primary_key TEXT NOT NULL,
    variant TEXT NOT NULL,
    url TEXT NOT NULL,
    record BLOB,
    body_file TEXT,
    fresh_until REAL NOT NULL,
    stale_until REAL NOT NULL,
    error_until REAL NOT NULL,
    keep_until REAL NOT NULL,
    stored_at REAL NOT NULL,
    stale_ok INTEGER NOT NULL,
    encoded BLOB,
    codings_due INTEGER NOT NULL,
    size_bytes INTEGER NOT NULL,
    body BLOB,
    PRIMARY KEY (primary_key, variant)
);

INSERT INTO cache_entries_v6 (
    primary_key, variant, url, record, body, body_file, fresh_until, stale_until, error_until,
    keep_until, stored_at, stale_ok, encoded, codings_due, size_bytes)
SELECT primary_key, variant, url,
       stoker_entry_record(variant, url, status, headers, body_file, body_size, response_time,
                           initial_age, keep_until, vary, tags, etag, last_modified, stored_at,
                           origin_vouched, stale_ok, encoded, codings_due),
       body, body_file, fresh_until, stale_until, error_until, keep_until, stored_at, stale_ok,
       stoker_entry_codings(encoded), codings_due, size_bytes
FROM cache_entries;

CREATE TABLE cache_tags_v6 (
    tag TEXT NOT NULL,
    primary_key TEXT NOT NULL,
    variant TEXT NOT NULL,
    PRIMARY KEY (tag, primary_key, variant),
    FOREIGN KEY (primary_key, variant)
        REFERENCES cache_entries_v6 (primary_key, variant) ON DELETE CASCADE
);

INSERT INTO cache_tags_v6 (tag, primary_key, variant)
SELECT tag, primary_key, variant FROM cache_tags;

DROP TABLE cache_tags;

DROP TABLE cache_entries;

ALTER TABLE cache_entries_v6 RENAME TO cache_entries;

ALTER TABLE cache_tags_v6 RENAME TO cache_tags;

CREATE INDEX cache_entries_url ON cache_entries (url);

CREATE INDEX cache_entries_keep_until ON cache_entries (keep_until);

CREATE INDEX cache_entries_stored_at ON cache_entries (stored_at);

CREATE INDEX cache_entries_live ON cache_entries (primary_key, variant, keep_until);

CREATE INDEX cache_tags_entry ON cache_tags (primary_key, variant);

-- The record of the cache version (component "version"): the prefix of every cache key,
-- which a hard purge of everything bumps, kept for every node of one database_url
-- (stoker.backends.postgres.version_store). One row at most; the version only grows.
CREATE TABLE cache_version (
    only_row BOOLEAN PRIMARY KEY DEFAULT true CHECK (only_row),
    version BIGINT NOT NULL CHECK (version >= 0),
    reclaimed BOOLEAN NOT NULL
);

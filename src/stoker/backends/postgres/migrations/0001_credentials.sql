-- Warm credentials (stoker.warm.credentials): a value per allowed name, write-only.
CREATE TABLE warm_credentials (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    set_at DOUBLE PRECISION NOT NULL
);

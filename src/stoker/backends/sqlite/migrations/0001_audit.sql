-- Admin audit log: one row per purge or refused admin call, see backends/sqlite/audit_store.py.
CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    count INTEGER,
    outcome TEXT NOT NULL
);

CREATE INDEX audit_log_at ON audit_log (at);

-- Admin audit log (component "audit"): one row per purge or refused admin call, from every
-- node (stoker.backends.postgres.audit_store). at is epoch seconds; target a JSON object as
-- text (jsonb would refuse the \u0000 an admin call's target may hold).
CREATE TABLE audit_log (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at DOUBLE PRECISION NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    count INTEGER,
    outcome TEXT NOT NULL
);

CREATE INDEX audit_log_at_idx ON audit_log (at);

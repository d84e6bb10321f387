-- One row per purpose; see stoker.schedule.store for the states.
CREATE TABLE deadlines (
    name TEXT NOT NULL PRIMARY KEY,
    due_at DOUBLE PRECISION,
    first_armed_at DOUBLE PRECISION,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    owner TEXT,
    claimed_until DOUBLE PRECISION,
    rearmed BOOLEAN NOT NULL DEFAULT false,
    completed_at DOUBLE PRECISION
);

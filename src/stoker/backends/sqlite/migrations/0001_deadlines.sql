-- One row per purpose; see stoker.schedule.store for the states.
CREATE TABLE deadlines (
    name TEXT NOT NULL PRIMARY KEY,
    due_at REAL,
    first_armed_at REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    owner TEXT,
    claimed_until REAL,
    rearmed INTEGER NOT NULL DEFAULT 0,
    completed_at REAL
);

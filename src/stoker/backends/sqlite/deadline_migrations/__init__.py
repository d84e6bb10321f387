"""SQLite migrations of the persisted deadlines (component ``deadlines``)."""

"""SQLite migrations of the job queue (component ``jobs``)."""

"""PostgreSQL migrations of the warm runs store: files ``NNNN_runs*.sql`` (component ``runs``)."""

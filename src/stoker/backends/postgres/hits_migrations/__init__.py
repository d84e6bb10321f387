"""PostgreSQL migrations of the hit statistics, ``NNNN_hits*.sql`` (component ``hits``)."""

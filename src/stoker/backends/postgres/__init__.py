"""PostgreSQL backends: connection pool, numbered migrations, stores for multi-node setups."""

"""PostgreSQL migrations of the persisted deadlines (component ``deadlines``)."""

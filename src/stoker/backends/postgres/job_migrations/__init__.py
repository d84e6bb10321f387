"""PostgreSQL migrations, ``NNNN_component.sql``; each component keeps its own ledger rows."""

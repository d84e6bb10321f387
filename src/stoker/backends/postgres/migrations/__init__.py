"""PostgreSQL migrations, ``NNNN_component_description.sql``: one package for every
component; each component keeps its own rows in the ``schema_migrations`` ledger."""

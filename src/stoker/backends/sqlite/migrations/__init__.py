"""Numbered SQLite migrations (``NNNN_description.sql``), applied by ``connection.migrate``."""

"""Numbered SQLite migrations of the hit statistics (component ``hits``)."""

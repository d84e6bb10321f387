"""Numbered SQLite migrations of the warm runs store (component ``runs``)."""

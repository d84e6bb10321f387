"""Numbered SQLite migrations of the admin audit log (component ``audit``)."""

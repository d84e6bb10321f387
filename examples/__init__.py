"""Runnable apps embedding Stoker (docs/python.md); each is exercised by a test."""

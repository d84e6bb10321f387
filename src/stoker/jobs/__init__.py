"""Durable jobs: the queue port, its data, retry and breaker policies, the worker.

The backends that implement the port live in :mod:`stoker.backends`;
:func:`stoker.backends.open` opens the one the settings choose (:mod:`stoker.backends.choice`).
"""

"""Storage backends: SQLite (embedded, the default), PostgreSQL (``database_url``) and
Redis (``l2_url``, the shared cache tier).

:mod:`stoker.backends.choice` is the one place deciding which backend serves each port;
:func:`open` (:mod:`stoker.backends.opening`) opens every port it chose as one
:class:`Backends` (PostgreSQL ports on one pool, Redis ports on one client), and
:func:`open_database` the job queue and the warmer's other stores alone (the CLI's).
Drivers are imported when a backend is opened, so importing ``stoker.backends`` never
imports one.
"""

from stoker.backends.opening import Backends, open, open_database

__all__ = ["Backends", "open", "open_database"]

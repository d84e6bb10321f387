"""Purges: what a purge names, how it is recorded, applied, relayed and answered.

- :mod:`~stoker.purge.scope`: what a purge names (URLs, prefixes, tags, everything; soft
  or hard), parsed from untrusted purge requests.
- :mod:`~stoker.purge.mark`: one recorded purge, and the rule for how marks judge an entry.
- :mod:`~stoker.purge.list`: the recent marks, the one list fetches and tiers ask.
- :mod:`~stoker.purge.bans`: the marks in force for L2 reads, by store time.
- :mod:`~stoker.purge.applier`: carries a mark out in both tiers, in slices.
- :mod:`~stoker.purge.events`: subscribers hear of each purge (the warmer).
- :mod:`~stoker.purge.purger`: the :class:`~stoker.purge.purger.Purger`, the one way a
  purge or an unsafe method's invalidation is run.
- :mod:`~stoker.purge.audit`: the audit ports purges (and admin calls) are recorded by.
- :mod:`~stoker.purge.method`: the ``PURGE`` HTTP method.
- :mod:`~stoker.purge.bus`: the purge bus port (``stoker.backends`` implement it).
- :mod:`~stoker.purge.outbox`: what the relay keeps while the bus does not answer.
- :mod:`~stoker.purge.relay`: this process on the bus.

Layering: this package sits with :mod:`stoker.cache` (each uses the other: the tiers
obey the marks, the applier changes the tiers); it never imports the proxy, the
servers, the admin side or the app (import-linter contracts in ``pyproject.toml``).
"""

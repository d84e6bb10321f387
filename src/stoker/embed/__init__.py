"""Stoker inside a Python app: the public API (``from stoker import Stoker, Rule``).

See ``docs/python.md``.  :class:`~stoker.embed.stoker.Stoker` owns the store and services;
:class:`~stoker.embed.middleware.StokerMiddleware` puts one app behind it;
:class:`~stoker.embed.rules.Rule` is one cache rule; :mod:`stoker.embed.page` the view
decorator; :class:`~stoker.embed.middleware.CacheMiddleware` the one-line form.
"""

"""The cache's keys: the one key function and what a key computed now depends on.

The composition root builds one :class:`Keying` first and gives it to the request core
(:class:`~stoker.proxy.pipeline.Pipeline`) and to the purger
(:class:`~stoker.purge.purger.Purger`), so a URL purge removes exactly what a request for
that URL would read, and a hard purge of everything switches the version every request
keys by.

Invariants:
- :meth:`Keying.key_for_parts` is the one key function: requests (the fast path
  included), unsafe-method invalidation, purges and the admin API all compute keys
  through it (:meth:`~Keying.key_for` and :meth:`~Keying.key_for_url` only unpack their
  arguments for it).
- :attr:`Keying.token` changes whenever a key computed now may differ from one computed
  before (the version switched, the rules reloaded), so memos of keys holding it never
  answer with an old key.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from stoker.config.rules import Rule, match_rule
from stoker.http.keys import primary_key
from stoker.proxy.request import RequestInfo


class Keying:
    """The cache version and the rules keys are computed under (see the module
    invariants)."""

    token: str
    """What a key computed now depends on: the cache version and the rules' generation.
    Memos of keys (the fast path's, the front's known heads) hold it, and forget what was
    computed under another."""

    def __init__(self, rules: tuple[Rule, ...], version: str = "1") -> None:
        """Keys under ``rules`` (the request core's, handed on at each reload:
        :meth:`reconfigure`) and cache ``version`` (the persisted one)."""
        self._rules = rules
        self._generation = 0
        self.version = version

    @property
    def version(self) -> str:
        """The cache version, part of every primary key (a hard purge of everything bumps
        it: no old key is read again)."""
        return self._version

    @version.setter
    def version(self, version: str) -> None:
        self._version = version
        self._restamp()

    def reconfigure(self, rules: tuple[Rule, ...]) -> None:
        """Key under reloaded ``rules`` from now on; no memo answers by the old ones."""
        self._rules = rules
        self._generation += 1
        self._restamp()

    def _restamp(self) -> None:
        self.token = f"{self._version}#{self._generation}"

    def key_for_parts(self, scheme: str, host: str, path: str, query: str,
                      rule: Rule | None) -> str:
        """The one key function: version, scheme, host, path, query less ``ignore_query``."""
        return primary_key(version=self._version, scheme=scheme, host=host, path=path,
                           query=query, ignore_query=rule.ignore_query if rule else ())

    def key_for(self, request: RequestInfo, rule: Rule | None) -> str:
        """The primary cache key of a request, ``rule`` being the one it matched."""
        return self.key_for_parts(request.scheme, request.host, request.path, request.query,
                                  rule)

    def key_for_url(self, url: str) -> str:
        """The primary key a GET of the absolute ``url`` would use (purges, invalidation)."""
        parts = urlsplit(url)
        host, path = parts.netloc.lower(), parts.path or "/"
        rule = match_rule(self._rules, host, path, parts.query)
        return self.key_for_parts(parts.scheme, host, path, parts.query, rule)

"""Which hosts are the site's: its own, and the aliases other software names it by.

Visitors reach a site under its own hosts: those of ``site_url``, of ``purge_hosts``,
and Stoker's listener.  A CMS, its sitemaps and its purge plugins often name it by
another host (the CMS's configured address, the origin's own): ``site_aliases``, and
``origin_host`` always (``Settings.aliases`` gives both).
Warming moves an alias's URLs onto the site, and a purge naming an alias covers the
site's own hosts; both read aliases here, one way.

Invariants:
- Hosts are compared as cache keys hold them (:func:`~stoker.http.keys.normalise_host`:
  lower-cased, the scheme's default port dropped).
- An alias is ``host`` (any port), ``host:port`` (that port only) or a URL (its host
  and port; no port in the URL means any port).
- :func:`listener_hosts` of a loopback or wildcard listener are its loopback names
  (``127.0.0.1``, ``localhost``, and ``[::1]`` for an IPv6 one) at its port, the names
  a visitor on this machine uses.
- A site with :attr:`SiteHosts.any_host` (an app embedding Stoker that names no host of
  its own: its hosts are whatever its server answers) knows every host; a path stands
  for none of them (there is no own host to expand it on).
- Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from stoker.http.keys import DEFAULT_PORTS, normalise_host

_LOOPBACK_V4 = frozenset({"0.0.0.0", "127.0.0.1", "localhost"})
_LOOPBACK_V6 = frozenset({"::", "[::]", "[::1]", "::1"})


def _alias_host(alias: str) -> tuple[str, str | None]:
    """An alias as (host, port or None for any port)."""
    netloc = urlsplit(alias if "://" in alias else f"http://{alias}").netloc.lower()
    colon = netloc.rfind(":")
    if colon > netloc.rfind("]"):
        return netloc[:colon], netloc[colon + 1 :] or None
    return netloc, None


class Aliases:
    """The ``site_aliases`` of one configuration."""

    def __init__(self, aliases: Iterable[str] = ()) -> None:
        self._hosts = frozenset(_alias_host(alias) for alias in aliases)

    def match(self, scheme: str, netloc: str) -> bool:
        """Whether ``netloc`` (``host[:port]``) of a ``scheme`` URL names an alias; never
        one that does not parse (a bad port, brackets that hold no IP address)."""
        try:
            parts = urlsplit(f"{scheme}://{netloc}")
            port = parts.port
        except ValueError:
            return False
        host = (parts.hostname or "").lower()
        if parts.netloc.startswith("["):
            host = f"[{host}]"
        port_text = str(port) if port else DEFAULT_PORTS.get(scheme.lower(), "80")
        return (host, port_text) in self._hosts or (host, None) in self._hosts


def listener_hosts(listen: str) -> tuple[str, ...]:
    """The hosts visitors on this machine reach the listener ``listen`` (``host:port``) by."""
    host, _, port = listen.rpartition(":")
    if host in _LOOPBACK_V4:
        return (f"127.0.0.1:{port}", f"localhost:{port}")
    if host in _LOOPBACK_V6:
        return (f"[::1]:{port}", f"localhost:{port}")
    return (normalise_host("http", listen),)


@dataclass(frozen=True, slots=True)
class SiteHosts:
    """The site's own hosts (normalised, the public one first) and its aliases."""

    own: tuple[str, ...]
    aliases: Aliases
    any_host: bool = False
    """Every host is the site's (an embedded Stoker naming none: see the invariants)."""

    @classmethod
    def of(cls, *, site_urls: Iterable[str], purge_hosts: Iterable[str], listen: str | None,
           aliases: Iterable[str]) -> SiteHosts:
        """The hosts of a configuration: ``site_url``'s, ``purge_hosts``, the listener's
        (``listen`` None: no listener of Stoker's own, an app's server answers; then
        naming no host at all means every host is the site's)."""
        own = [normalise_host(parts.scheme, parts.netloc)
               for parts in (urlsplit(url) for url in site_urls)]
        own += (normalise_host("http", host) for host in purge_hosts)
        own += listener_hosts(listen) if listen is not None else ()
        return cls(tuple(dict.fromkeys(own)), Aliases(aliases), any_host=not own)

    def covered(self, scheme: str, host: str) -> tuple[tuple[str, str], ...]:
        """The ``(scheme, host)`` pairs a purge naming ``host`` covers: the site's own hosts
        in both schemes for an alias, else ``host`` itself."""
        if self.aliases.match(scheme, host):
            return self.everywhere()
        return ((scheme, host),)

    def covered_by_path(self, host: str | None) -> tuple[tuple[str, str], ...]:
        """The ``(scheme, host)`` pairs a purge of a path on ``host`` covers, in both
        schemes: the site's own hosts for an alias or no host, else ``host``."""
        if host is None or self.aliases.match("http", host):
            return self.everywhere()
        return (("http", host), ("https", host))

    def everywhere(self) -> tuple[tuple[str, str], ...]:
        """Every own host in both schemes (a key holds the scheme a visitor used)."""
        return tuple((scheme, host) for host in self.own for scheme in ("http", "https"))

    def known(self, scheme: str, host: str) -> bool:
        """Whether ``host`` is one of the site's own hosts or an alias."""
        return self.any_host or host in self.own or self.aliases.match(scheme, host)

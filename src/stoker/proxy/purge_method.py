"""The ``PURGE`` HTTP method on the public listener (the Varnish/nginx habit).

``curl -X PURGE http://site/path`` purges every variant of that URL;
``X-Purge-Soft: 1`` (or ``Stoker-Soft: 1``) makes it a soft purge.

Invariants:
- Off unless ``purge_allow`` lists addresses/networks: then every ``PURGE``
  is answered 405 and nothing is purged.
- Allowed only when the client address is inside one of the ``purge_allow``
  networks: the TCP peer, or what ``X-Forwarded-For``/``Forwarded`` say when
  the peer is one of ``trusted_proxies`` (never a header from anyone else,
  which the client controls); anyone else gets 403 and nothing is purged.
- The URL purged is the request's (scheme, ``Host``, target), read as the admin API
  reads an absolute URL (:func:`~stoker.cache.invalidation.expand_url`): a ``Host``
  in ``site_aliases`` or equal to ``origin_host`` — the CMS's own address, which
  Wagtail's and WordPress's purge clients send — purges the page on every one of the
  site's own hosts, and a ``Host`` that is neither the site's nor an alias is named in
  the answer's ``unknown_hosts``.
- Every attempt that is not disabled outright is audited with actor
  ``purge-method:<client address>``: an allowed one always, a refused one through
  :class:`~stoker.proxy.purge.Refusals` (the admin listener's policy: a client's first
  refusals of a window recorded, the rest counted into one summary row), so a flood of
  refused ``PURGE`` adds a bounded number of rows and log lines per client and minute;
  responses are ``no-store``.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Sequence

from stoker.cache.invalidation import PurgeRequestError, PurgeScope, expand_url
from stoker.http.headers import get_header
from stoker.http.site_hosts import SiteHosts
from stoker.proxy.purge import Auditor, Purger, Refusals, record_safely
from stoker.proxy.reply import ReplySink
from stoker.proxy.request import RequestInfo

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
SOFT_HEADERS = (b"x-purge-soft", b"stoker-soft")
TRUE_VALUES = frozenset({b"1", b"true", b"yes", b"on"})


def parse_networks(items: Iterable[str]) -> tuple[Network, ...]:
    """``purge_allow`` entries (addresses or CIDR networks) as networks."""
    return tuple(ipaddress.ip_network(item.strip(), strict=False) for item in items)


def purge_allowed(client: str | None, networks: Sequence[Network]) -> str:
    """``"disabled"``, ``"forbidden"`` or ``"allowed"`` for a PURGE from ``client``.  Pure."""
    if not networks:
        return "disabled"
    try:
        address = ipaddress.ip_address(client or "")
    except ValueError:
        return "forbidden"
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return "allowed" if any(address in network for network in networks) else "forbidden"


def wants_soft(headers: Sequence[tuple[bytes, bytes]]) -> bool:
    """True when the request asks for a soft purge.  Pure."""
    return any((get_header(headers, name) or b"").strip().lower() in TRUE_VALUES
               for name in SOFT_HEADERS)


class PurgeMethod:
    """Answers ``PURGE`` requests (see the module invariants)."""

    def __init__(self, purger: Purger, allow: Sequence[Network], audit: Auditor | None,
                 refusals: Refusals, sites: SiteHosts) -> None:
        self._purger = purger
        self._allow = tuple(allow)
        self._audit = audit
        self._refusals = refusals
        self._sites = sites

    async def __call__(self, request: RequestInfo, sink: ReplySink) -> None:
        decision = purge_allowed(request.client, self._allow)
        if decision == "disabled":
            await _answer(sink, 405, {"error": "the PURGE method is disabled; set purge_allow "
                                               "to allow it from given addresses"},
                          allow=b"GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
            return
        actor = f"purge-method:{request.client or 'unknown'}"
        try:
            expanded = expand_url(request.url, None, self._sites, frozenset(), "url")
        except PurgeRequestError as error:
            await _answer(sink, 400, {"error": str(error)})
            return
        unknown = () if expanded.unknown_host is None else (expanded.unknown_host,)
        scope = PurgeScope(urls=expanded.urls, soft=wants_soft(request.headers),
                           unknown_hosts=unknown)
        if decision == "forbidden":
            await self._refusals.refused(client=request.client or "unknown", actor=actor,
                                         action="purge", target={**scope.as_json(),
                                                                 "status": 403})
            await _answer(sink, 403, {"error": f"PURGE is not allowed from {request.client}"})
            return
        result = await self._purger.purge(scope)
        await record_safely(self._audit, actor=actor, action="purge", target=scope.as_json(),
                            count=result.purged, outcome="ok")
        await _answer(sink, 200, result.as_json())


async def _answer(sink: ReplySink, status: int, body: object, *,
                  allow: bytes | None = None) -> None:
    data = (json.dumps(body) + "\n").encode()
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(data)).encode()), (b"cache-control", b"no-store")]
    if allow is not None:
        headers.append((b"allow", allow))
    sink.whole(status, headers, data)

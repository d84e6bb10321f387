"""The ``PURGE`` HTTP method on the public listener (the Varnish/nginx habit).

``curl -X PURGE http://site/path`` purges every variant of that URL;
``X-Purge-Soft: 1`` (or ``Stoker-Soft: 1``) makes it a soft purge, ``X-Purge-Soft: 0``
a hard one; without either it is what ``purge_mode`` says (read at each request, so a
reload changes it).

Invariants:
- Off unless ``purge_allow`` lists addresses/networks: then every ``PURGE``
  is answered 405 and nothing is purged.
- Allowed only when the client address is inside one of the ``purge_allow``
  networks: the TCP peer, or what ``X-Forwarded-For``/``Forwarded`` say when
  the peer is one of ``trusted_proxies`` (never a header from anyone else,
  which the client controls); anyone else gets 403 and nothing is purged.
- The URL purged is the request's (scheme, ``Host``, target), read as the admin API
  reads an absolute URL (:func:`~stoker.purge.scope.expand_url`): a ``Host``
  in ``site_aliases`` or equal to ``origin_host`` — the CMS's own address, which
  Wagtail's and WordPress's purge clients send — purges the page on every one of the
  site's own hosts, and a ``Host`` that is neither the site's nor an alias is named in
  the answer's ``unknown_hosts``.
- Every attempt that is not disabled outright is audited with actor
  ``purge-method:<client address>``: an allowed one always, a refused one through
  :class:`~stoker.purge.audit.Refusals` (the admin listener's policy: a client's first
  refusals of a window recorded, the rest counted into one summary row), so a flood of
  refused ``PURGE`` adds a bounded number of rows and log lines per client and minute;
  responses are ``no-store``.
- A soft header with a value that is neither true nor false (:data:`TRUE_VALUES`,
  :data:`FALSE_VALUES`) is answered 400 naming the header, and nothing is purged; a true
  one in either header wins over a false one in the other.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from stoker.http.headers import get_header
from stoker.http.site_hosts import SiteHosts
from stoker.purge.audit import Auditor, Refusals, record_safely
from stoker.purge.purger import Purger
from stoker.purge.scope import PurgeRequestError, PurgeScope, expand_url, purge_is_soft

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
SOFT_HEADERS = (b"x-purge-soft", b"stoker-soft")
TRUE_VALUES = frozenset({b"1", b"true", b"yes", b"on"})
FALSE_VALUES = frozenset({b"0", b"false", b"no", b"off"})


class PurgeRequest(Protocol):
    """What the method reads of a request (the core's
    :class:`~stoker.proxy.request.RequestInfo`)."""

    @property
    def url(self) -> str: ...

    @property
    def client(self) -> str | None: ...

    @property
    def headers(self) -> Sequence[tuple[bytes, bytes]]: ...


Answer = tuple[int, list[tuple[bytes, bytes]], bytes]
"""The method's answer: status, fields, body (the core's synth step sends it)."""


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


def asked_soft(headers: Sequence[tuple[bytes, bytes]]) -> bool | None:
    """True when the request asks for a soft purge, False when it asks for a hard one, None
    when it does not say; :class:`PurgeRequestError` naming the header for a value that is
    neither.  Pure."""
    said: set[bool] = set()
    for name in SOFT_HEADERS:
        value = get_header(headers, name)
        if value is None:
            continue
        value = value.strip().lower()
        if value not in TRUE_VALUES | FALSE_VALUES:
            raise PurgeRequestError(name.decode(), f"{value.decode('latin-1')!r} is neither "
                                                   "true (1, true, yes, on) nor false "
                                                   "(0, false, no, off)")
        said.add(value in TRUE_VALUES)
    return max(said) if said else None


class PurgeMethod:
    """Answers ``PURGE`` requests (see the module invariants)."""

    def __init__(self, purger: Purger, allow: Sequence[Network], audit: Auditor | None,
                 refusals: Refusals, sites: SiteHosts, mode: Callable[[], str]) -> None:
        self._purger = purger
        self._mode = mode
        self._allow = tuple(allow)
        self._audit = audit
        self._refusals = refusals
        self._sites = sites

    async def __call__(self, request: PurgeRequest) -> Answer:
        decision = purge_allowed(request.client, self._allow)
        if decision == "disabled":
            return _answer(405, {"error": "the PURGE method is disabled; set purge_allow "
                                          "to allow it from given addresses"},
                           allow=b"GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
        actor = f"purge-method:{request.client or 'unknown'}"
        try:
            expanded = expand_url(request.url, None, self._sites, frozenset(), "url")
            soft = purge_is_soft(asked_soft(request.headers), self._mode())
        except PurgeRequestError as error:
            return _answer(400, {"error": str(error)})
        unknown = () if expanded.unknown_host is None else (expanded.unknown_host,)
        scope = PurgeScope(urls=expanded.urls, soft=soft, unknown_hosts=unknown)
        if decision == "forbidden":
            await self._refusals.refused(client=request.client or "unknown", actor=actor,
                                         action="purge", target={**scope.as_json(),
                                                                 "status": 403})
            return _answer(403, {"error": f"PURGE is not allowed from {request.client}"})
        result = await self._purger.purge(scope)
        await record_safely(self._audit, actor=actor, action="purge", target=scope.as_json(),
                            count=result.purged, outcome="ok")
        return _answer(200, result.as_json())


def _answer(status: int, body: object, *, allow: bytes | None = None) -> Answer:
    data = (json.dumps(body) + "\n").encode()
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(data)).encode()), (b"cache-control", b"no-store")]
    if allow is not None:
        headers.append((b"allow", allow))
    return status, headers, data

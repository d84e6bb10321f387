"""Who the client is and which scheme it used, behind trusted proxies.

Stoker usually sits behind a TLS terminator (nginx, a load balancer) that
talks plain HTTP to it and says what the visitor used in ``X-Forwarded-Proto``
/ ``Forwarded: proto=`` (RFC 7239) and who the visitor is in
``X-Forwarded-For`` / ``Forwarded: for=``.  Anyone can send those headers, so
they count only when the TCP peer is a trusted proxy.

Invariants:
- From a peer outside ``trusted``, the forwarding headers are ignored: the
  scheme is the connection's and the client is the peer.
- From a trusted peer, the scheme is the first ``X-Forwarded-Proto`` value,
  else the first ``Forwarded`` element's ``proto``, when it is ``http`` or
  ``https`` (anything else is ignored).  ``X-Forwarded-Proto`` wins because
  the proxies users run (nginx, HAProxy, cloud load balancers) set it.
- The client is found by walking the forwarded chain (``X-Forwarded-For``,
  else ``Forwarded: for=``) from the right, skipping trusted addresses: the
  first untrusted address is the client; if every hop is trusted, the
  leftmost valid one is.  Unparseable hops end the walk (the hop before them
  is the last one a trusted proxy vouched for).
- :data:`OVERRIDE_FIELDS` (``Forwarded``, ``X-Original-URL``, ``X-HTTP-Method-Override``
  and their kin) never reach the origin as a client wrote them: :func:`without_overrides`
  drops them all from an untrusted peer, and from a trusted one all but those the
  operator keeps; :func:`forwarded_field` writes Stoker's own ``Forwarded`` instead, its
  ``for=`` hops the chain a trusted peer forwarded (nothing from anyone else) then the
  peer, its ``host=`` and ``proto=`` what Stoker keys and sends as ``X-Forwarded-Host``
  and ``X-Forwarded-Proto``; every value is a token or a quoted string (RFC 7239 §4),
  a hop that is no address, ``unknown`` nor an obfuscated name is ``unknown``.
- Pure: no I/O, no clock.  :class:`TrustedProxies` memoises its verdict per
  address (bounded) so the hot path pays one dict lookup.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection, Iterable, Sequence
from typing import Final

from stoker.http.headers import Headers, without

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
DEFAULT_TRUSTED = ("127.0.0.0/8", "::1")
_MEMO_LIMIT = 4096
_SCHEMES = frozenset({"http", "https"})
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_OBFUSCATED = re.compile(r"_[A-Za-z0-9._\-]+")  # RFC 7239 §6.3

OVERRIDE_FIELDS: Final = frozenset({
    b"forwarded", b"x-forwarded-scheme", b"x-forwarded-port", b"x-forwarded-prefix",
    b"x-forwarded-server", b"x-host", b"x-original-url", b"x-rewrite-url",
    b"x-http-method-override", b"x-http-method", b"x-method-override"})
"""Request fields frameworks believe over the request line, ``Host`` or connection
(the URL, method, scheme, host or port they name): neither the cache key nor the
``X-Forwarded-*`` Stoker sends reflect them, so an origin that trusts one would make a
page for another URL, method or host, stored under this request's key."""


def parse_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An IP address from a forwarded hop: ``1.2.3.4``, ``1.2.3.4:5``, ``[::1]:80``, ``"[::1]"``."""
    text = text.strip().strip('"')
    if text.startswith("["):
        text = text[1:].split("]", 1)[0]
    elif text.count(":") == 1:  # IPv4 with a port
        text = text.split(":", 1)[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class TrustedProxies:
    """The networks whose forwarding headers are believed."""

    __slots__ = ("_memo", "networks")

    def __init__(self, networks: Iterable[str] = DEFAULT_TRUSTED) -> None:
        self.networks: tuple[Network, ...] = tuple(
            ipaddress.ip_network(item.strip(), strict=False) for item in networks)
        self._memo: dict[str, bool] = {}

    def trusts(self, address: str | None) -> bool:
        """True when ``address`` (a peer or hop) is inside a trusted network."""
        if not address or not self.networks:
            return False
        verdict = self._memo.get(address)
        if verdict is None:
            parsed = parse_address(address)
            verdict = parsed is not None and any(parsed in net for net in self.networks)
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            self._memo[address] = verdict
        return verdict


def forwarded_elements(values: Sequence[bytes]) -> list[dict[str, str]]:
    """The elements of ``Forwarded`` field lines (RFC 7239 §4), parameters lower-cased."""
    elements: list[dict[str, str]] = []
    for value in values:
        for element in value.decode("latin-1").split(","):
            params: dict[str, str] = {}
            for pair in element.split(";"):
                name, sep, raw = pair.partition("=")
                if sep:
                    params.setdefault(name.strip().lower(), raw.strip().strip('"'))
            elements.append(params)
    return elements


def _list_members(values: Sequence[bytes]) -> list[str]:
    return [member.strip() for value in values
            for member in value.decode("latin-1").split(",") if member.strip()]


def forwarded_scheme(default: str, proto: Sequence[bytes], forwarded: Sequence[bytes]) -> str:
    """The scheme a trusted proxy reports (see module invariants), else ``default``."""
    members = _list_members(proto)
    if members:
        candidate = members[0].lower()
        return candidate if candidate in _SCHEMES else default
    for element in forwarded_elements(forwarded)[:1]:
        candidate = element.get("proto", "").lower()
        if candidate in _SCHEMES:
            return candidate
    return default


def forwarded_client(peer: str, chain: Sequence[str], trusted: TrustedProxies) -> str:
    """The client address: walk ``chain`` + peer from the right past trusted hops."""
    current = peer
    for hop in reversed(chain):
        if not trusted.trusts(current):
            return current
        address = parse_address(hop)
        if address is None:
            return current
        current = str(address)
    return current


def client_chain(xff: Sequence[bytes], forwarded: Sequence[bytes]) -> list[str]:
    """The forwarded chain, leftmost first: ``X-Forwarded-For``, else ``Forwarded: for=``."""
    if xff:
        return _list_members(xff)
    return [element["for"] for element in forwarded_elements(forwarded) if "for" in element]


def without_overrides(headers: Headers, *, trusted_peer: bool,
                      kept: Collection[bytes] = ()) -> Headers:
    """``headers`` without :data:`OVERRIDE_FIELDS`, but for those in ``kept`` when the
    peer is a trusted proxy (``headers`` itself when it has none to drop)."""
    drop = OVERRIDE_FIELDS - frozenset(kept) if trusted_peer and kept else OVERRIDE_FIELDS
    if not any(name.lower() in drop for name, _ in headers):
        return headers
    return without(headers, drop)


def forwarded_node(hop: str) -> str:
    """A hop as a ``Forwarded`` node (RFC 7239 §6): an address (IPv6 in brackets, quoted;
    the port dropped), ``unknown`` or an obfuscated name as is, anything else
    ``unknown``."""
    text = hop.strip().strip('"')
    address = parse_address(text)
    if address is None:
        return text if text == "unknown" or _OBFUSCATED.fullmatch(text) else "unknown"
    return f'"[{address}]"' if address.version == 6 else str(address)


def forwarded_value(text: str) -> str:
    """``text`` as a ``Forwarded`` parameter value: a token, else a quoted string."""
    if _TOKEN.fullmatch(text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def forwarded_field(previous: Sequence[bytes], chain: Sequence[str], peer: str | None, *,
                    scheme: str, host: str) -> bytes:
    """The ``Forwarded`` value sent to the origin.  With ``previous`` (a trusted proxy's
    own ``Forwarded`` lines, kept): those, then Stoker's element for ``peer``.  Without:
    one element per hop of ``chain`` then ``peer``, the first with the ``host`` and
    ``scheme`` the request is keyed by."""
    about = f"host={forwarded_value(host)};proto={forwarded_value(scheme)}"
    own = [f"for={forwarded_node(peer)}"] if peer else []
    if previous:
        return b", ".join([*previous, ";".join([*own, about]).encode("latin-1")])
    hops = [f"for={forwarded_node(hop)}" for hop in chain] + own
    return ", ".join([";".join([*hops[:1], about]), *hops[1:]]).encode("latin-1")

"""What the proxy needs to know about one client request, read from its head as a server
read it (:class:`RequestHead`: Stoker's front builds it from what it parsed; an ASGI scope
carries one, :func:`head_of`) by one validation, :func:`parse_request`.

Pure.  Invariants: a :class:`RequestInfo` is only built for a request whose
target and Host are well-formed — exactly one Host, and an HTTP/1.1 request
without one is refused (RFC 9112 §3.2; HTTP/1.0 and HTTP/2 requests without a
Host use the default host; an absolute-form target's authority replaces the
Host, RFC 9112 §3.2.2), never both ``Content-Length`` and
``Transfer-Encoding`` (RFC 9112 §6.3), an HTTP version in its request line
(:data:`HTTP_VERSIONS`), no ``Transfer-Encoding`` on HTTP/1.0
(RFC 9112 §6.1), at most :data:`MAX_HEADERS` field lines of at most
:data:`MAX_HEADER_BYTES` in all (else 431); anything else raises :class:`BadRequest`,
which the pipeline answers with 400 (a malformed request never crashes it).
``host`` is lower-cased without the scheme's default port, as the key has it.
``headers`` are the request as it is forwarded: without the fields its
``Connection`` header names (RFC 9110 §7.6.1; Host and framing excepted), with one
``Cookie`` line at most (HTTP/2's crumbs joined with ``"; "``) holding no Stoker admin
session cookie (:func:`~stoker.http.cookies.one_cookie_field`), without the override
fields (``Forwarded``, ``X-Original-URL``, ...: :data:`~stoker.http.forwarded.OVERRIDE_FIELDS`)
but those ``kept`` from a trusted proxy, so everything read from them (Vary selection,
cookies, credentials) is what the origin sees.
``scheme`` and ``client`` are what the visitor used and is: taken from the
forwarding headers only when the TCP peer is a trusted proxy
(:mod:`stoker.http.forwarded`); ``peer`` is always the TCP peer, ``forwarded_for``
the chain of addresses a trusted peer forwarded (none from anyone else).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from stoker.http.cookies import one_cookie_field
from stoker.http.forwarded import (
    TrustedProxies,
    client_chain,
    forwarded_client,
    forwarded_scheme,
    without_overrides,
)
from stoker.http.headers import connection_tokens, get_all, get_header
from stoker.http.keys import normalise_host, url_from_parts
from stoker.http.request_fields import RequestFields
from stoker.origin.context import RequestContext

_HOST = re.compile(r"^(?:[A-Za-z0-9.\-_~]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$")
_FORBIDDEN_PATH = re.compile(r"[\x00-\x20\x7f]")
_ABSOLUTE_FORM = re.compile(r"^https?://([^/?#]*)(.*)$", re.IGNORECASE)


MAX_HEADER_BYTES = 64 * 1024
"""Largest header section proxied (names and values): servers differ (granian passes
200 KB on), so the pipeline holds the line itself (nginx: 32 KB, Varnish: 32 KB)."""
MAX_HEADERS = 100
"""Most header field lines proxied (Apache's ``LimitRequestFields``; Varnish: 64)."""
HTTP_VERSIONS = frozenset({"1", "1.0", "1.1", "2", "2.0", "3"})
"""Versions proxied, as servers spell them (granian says ``1`` for HTTP/1.0); a request
line without one (HTTP/0.9's form, which httptools accepts) is refused."""


class BadRequest(ValueError):
    """The request cannot be proxied; the message is safe to show to the client."""

    status = 400


class HeadersTooLarge(BadRequest):
    """The header section is over :data:`MAX_HEADER_BYTES` (RFC 6585 §5)."""

    status = 431


LookedUp = tuple[str, Any]
"""``(primary key, entries)``: what the fast path read from L2 for a request."""


@dataclass(slots=True)
class RequestInfo:
    """A parsed client request.  ``headers`` are raw header fields (lower-case names)."""

    method: str
    scheme: str
    host: str
    path: str
    query: str
    headers: list[tuple[bytes, bytes]]
    client: str | None
    peer: str | None = None
    forwarded_for: tuple[str, ...] = ()
    """The addresses a trusted peer forwarded (``X-Forwarded-For``, else ``Forwarded:
    for=``), leftmost first; none from an untrusted peer."""
    context: RequestContext = field(default_factory=RequestContext)
    """What its origin requests read and report (a warm visit's allowance, the ASGI
    scope, the time waited for the origin)."""
    looked_up: LookedUp | None = None
    """``(primary key, entries)`` the fast path already read from L2 for this request."""
    declares_body: bool = False
    """The request's framing announces a body (``Content-Length`` above 0, or
    ``Transfer-Encoding``)."""
    fields: RequestFields = field(init=False)
    """The fields the core reads (``headers`` scanned once; they are never changed after)."""

    def __post_init__(self) -> None:
        self.fields = RequestFields(self.headers)

    @property
    def warm(self) -> bool:
        """A warm visit, not a visitor's request."""
        return self.context.warm

    @property
    def target(self) -> str:
        """Origin-form request target: path plus query."""
        return f"{self.path}?{self.query}" if self.query else self.path

    @property
    def url(self) -> str:
        """Absolute URL of the resource, as keys and purges see it."""
        return url_from_parts(self.scheme, self.host, self.path, self.query)


NO_PROXIES = TrustedProxies(())


@dataclass(frozen=True, slots=True)
class RequestHead:
    """A request's head as a server read it, not validated yet: what
    :func:`parse_request` reads, whether Stoker's front read it or an ASGI scope carries it
    (:func:`head_of`)."""

    method: str
    target: str
    """The target as sent, less its query: an origin-form path, or an absolute-form
    target's scheme, authority and path."""
    query: str
    http_version: str
    headers: list[tuple[bytes, bytes]]
    """As received, names lower-cased."""
    scheme: str
    """The connection's scheme."""
    peer: str | None
    """The TCP peer's address."""


def peer_of(scope: Mapping[str, Any]) -> str | None:
    """The TCP peer's address from an ASGI scope."""
    client = scope.get("client")
    return str(client[0]) if client else None


def scope_target(scope: Mapping[str, Any]) -> str:
    """An ASGI scope's target as sent, less its query (``raw_path`` when the server gives
    it, else ``path``)."""
    raw_path = scope.get("raw_path")
    return raw_path.decode("latin-1") if raw_path else str(scope.get("path") or "")


def head_of(scope: Mapping[str, Any]) -> RequestHead:
    """The head an ASGI HTTP scope carries."""
    return RequestHead(
        method=str(scope.get("method", "GET")), target=scope_target(scope),
        query=(scope.get("query_string") or b"").decode("latin-1"),
        http_version=str(scope.get("http_version", "1.1")),
        headers=list(scope.get("headers") or ()), scheme=str(scope.get("scheme") or "http"),
        peer=peer_of(scope))


def visitor_scheme(scheme: str, peer: str | None, headers: list[tuple[bytes, bytes]],
                   trusted: TrustedProxies) -> str:
    """The scheme the visitor used: the connection's (``scheme``), or, when ``peer`` is a
    trusted proxy, its word for it."""
    if not trusted.trusts(peer):
        return scheme
    return forwarded_scheme(scheme, get_all(headers, b"x-forwarded-proto"),
                            get_all(headers, b"forwarded"))


def request_scheme(scope: Mapping[str, Any], headers: list[tuple[bytes, bytes]],
                   trusted: TrustedProxies) -> str:
    """:func:`visitor_scheme` of an ASGI scope's request."""
    return visitor_scheme(str(scope.get("scheme") or "http"), peer_of(scope), headers, trusted)


def trusted_chain(peer: str | None, headers: list[tuple[bytes, bytes]],
                  trusted: TrustedProxies) -> list[str]:
    """The forwarded chain, leftmost first, when ``peer`` is a trusted proxy; else none."""
    if peer is None or not trusted.trusts(peer):
        return []
    return client_chain(get_all(headers, b"x-forwarded-for"), get_all(headers, b"forwarded"))


def visitor_address(peer: str | None, headers: list[tuple[bytes, bytes]],
                    trusted: TrustedProxies) -> str | None:
    """The visitor's address: ``peer``, or what trusted proxies forwarded."""
    chain = trusted_chain(peer, headers, trusted)
    return forwarded_client(peer, chain, trusted) if peer is not None else None


def request_client(scope: Mapping[str, Any], headers: list[tuple[bytes, bytes]],
                   trusted: TrustedProxies) -> str | None:
    """:func:`visitor_address` of an ASGI scope's request."""
    return visitor_address(peer_of(scope), headers, trusted)


def split_target(target: str) -> tuple[str | None, str]:
    """The authority of an absolute-form ``target`` (``None`` otherwise) and its path."""
    authority = None
    absolute = _ABSOLUTE_FORM.match(target)
    if absolute:  # RFC 9112 §3.2.2: "GET http://host/path HTTP/1.1"
        authority, target = absolute.group(1), absolute.group(2) or "/"
    return authority, target.split("?", 1)[0]  # some servers leave the query in raw_path


def request_path(scope: Mapping[str, Any]) -> str:
    """The request's path as sent, without an absolute-form target's scheme and authority."""
    return split_target(scope_target(scope))[1]


def check_header_limits(headers: list[tuple[bytes, bytes]]) -> None:
    """Raise :class:`HeadersTooLarge` beyond :data:`MAX_HEADERS` lines or
    :data:`MAX_HEADER_BYTES` bytes."""
    if len(headers) > MAX_HEADERS:
        raise HeadersTooLarge(f"the request has more than {MAX_HEADERS} header fields")
    if sum(len(name) + len(value) for name, value in headers) > MAX_HEADER_BYTES:
        raise HeadersTooLarge(f"the request's headers exceed {MAX_HEADER_BYTES} bytes")


def declares_body(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether the framing announces a body: ``Transfer-Encoding``, or a
    ``Content-Length`` other than 0."""
    length = get_header(headers, b"content-length")
    if length is not None:
        return length.strip() not in (b"", b"0")
    return get_header(headers, b"transfer-encoding") is not None


_KEPT_WHEN_NAMED = frozenset({b"host", b"content-length", b"transfer-encoding", b"connection"})


def as_forwarded(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` without the fields ``Connection`` names (RFC 9110 §7.6.1), Host and
    the framing the server has already read the body by excepted."""
    named = connection_tokens(headers) - _KEPT_WHEN_NAMED
    if not named:
        return headers
    return [(name, value) for name, value in headers if name.lower() not in named]


def parse_request(head: RequestHead, default_host: str,
                  trusted: TrustedProxies = NO_PROXIES, *,
                  context: RequestContext | None = None,
                  looked_up: LookedUp | None = None,
                  kept: Collection[bytes] = ()) -> RequestInfo:
    """Build a :class:`RequestInfo` from ``head`` (``context``: its request context, else a
    new visitor's; either way its ``client`` is set to the request's; ``looked_up``: what
    the fast path read from L2 for it; ``kept``: the override fields a trusted proxy's
    requests keep) or raise :class:`BadRequest`: the one validation of every server's
    requests (see the module invariants)."""
    headers = head.headers
    check_header_limits(headers)
    authority, path = split_target(head.target)
    if not path.startswith("/") or _FORBIDDEN_PATH.search(path):
        raise BadRequest("the request target must be an absolute path")
    chunked = get_header(headers, b"transfer-encoding") is not None
    if chunked and get_header(headers, b"content-length") is not None:
        raise BadRequest("the request has both Content-Length and Transfer-Encoding")  # §6.3
    version = head.http_version
    if version not in HTTP_VERSIONS:
        raise BadRequest("the request line has no HTTP version")  # RFC 9112 §3
    if chunked and version in ("1", "1.0"):  # RFC 9112 §6.1: its framing is faulty
        raise BadRequest("an HTTP/1.0 request cannot use Transfer-Encoding")
    hosts = get_all(headers, b"host")
    if len(hosts) > 1:
        raise BadRequest("the request has more than one Host header")
    host = hosts[0].decode("latin-1").strip() if hosts else ""
    if not host:  # granian reports a missing Host as an empty one
        if version == "1.1":
            raise BadRequest("an HTTP/1.1 request needs a Host header")  # RFC 9112 §3.2
        host = default_host
    if authority is not None:  # RFC 9112 §3.2.2: the target's authority, not Host
        host = authority
    if not _HOST.match(host):
        raise BadRequest("the Host header is malformed")
    peer = head.peer
    scheme = visitor_scheme(head.scheme, peer, headers, trusted)
    forwarded = without_overrides(one_cookie_field(as_forwarded(headers)),
                                  trusted_peer=trusted.trusts(peer), kept=kept)
    client = visitor_address(peer, headers, trusted)  # forwarding fields are ours to read
    if context is None:
        context = RequestContext()
    context.client = client
    return RequestInfo(
        method=head.method.upper(),
        scheme=scheme,
        host=normalise_host(scheme, host),
        path=path,
        query=head.query,
        headers=forwarded,
        client=client,
        peer=peer,
        forwarded_for=tuple(trusted_chain(peer, headers, trusted)),
        context=context,
        looked_up=looked_up,
        declares_body=declares_body(headers),
    )

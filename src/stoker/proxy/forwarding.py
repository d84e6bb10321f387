"""Header rewriting between client, origin and cache.  Pure.

Invariants:
- Requests to the origin never carry hop-by-hop fields; they carry
  ``X-Forwarded-For`` (the incoming chain plus the TCP peer),
  ``X-Forwarded-Proto`` (the scheme as resolved through trusted proxies),
  ``X-Forwarded-Host``, a ``Forwarded`` that says the same
  (:func:`~stoker.http.forwarded.forwarded_field`: the client's own never passes; a
  trusted proxy's only when kept, with Stoker's element appended) and a ``Via`` naming
  this proxy.
- A cache fetch never forwards the client's own conditional or range fields:
  the cache fetches whole representations and answers the client's
  conditionals itself from what it stored.
- A cache fetch sends the origin ``Accept-Encoding`` as
  :func:`~stoker.http.encoding.origin_offer` has it (the codings Stoker decodes that
  the client accepts, else ``identity``): the client can read the answer, and Stoker
  can store it decoded for every other client.
- Framing is not this module's: every origin client replaces the client's
  ``Content-Length``/``Transfer-Encoding``/``Expect`` with its own
  (:func:`~stoker.origin.port.framed`).
- The origin gets the Host as the key has it (lower-cased, default port dropped),
  or ``origin_host``.
- Stored headers never contain hop-by-hop fields, ``Age``, or (when the
  policy says so) ``Set-Cookie``; they are what every later client receives.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from stoker.http.encoding import origin_offer, weakened
from stoker.http.forwarded import forwarded_field
from stoker.http.headers import get_all, get_joined, strip_hop_by_hop, without
from stoker.proxy.request import RequestInfo

Headers = list[tuple[bytes, bytes]]

CLIENT_VALIDATORS = frozenset(
    {b"if-none-match", b"if-modified-since", b"if-match", b"if-unmodified-since", b"if-range",
     b"range"}
)
PROXY_FIELDS = frozenset({b"x-forwarded-for", b"x-forwarded-proto", b"x-forwarded-host",
                          b"forwarded", b"via"})
NOT_STORED = frozenset({b"age"})


def origin_request_headers(
    request: RequestInfo,
    *,
    via: bytes,
    origin_host: str | None,
    for_cache: bool,
    cookie: str | bool | None = True,
    extra: Sequence[tuple[bytes, bytes]] = (),
) -> Headers:
    """Headers for the origin request.

    ``for_cache`` drops the client's conditionals and Range and offers the origin the
    codings of :func:`~stoker.http.encoding.origin_offer`; ``cookie`` is
    ``True`` to keep the client's Cookie as is, else the value to send
    (``None``/``False`` to send none); ``extra`` (e.g. our own validators) is appended.
    """
    drop: set[bytes] = set(PROXY_FIELDS) | {b"host"}
    if for_cache:
        drop |= CLIENT_VALIDATORS | {b"accept-encoding"}
    if cookie is not True:
        drop.add(b"cookie")
    headers = without(strip_hop_by_hop(request.headers), drop)
    headers.append((b"host", (origin_host or request.host).encode("latin-1")))
    if for_cache:
        offer = origin_offer(get_joined(request.headers, b"accept-encoding"))
        headers.append((b"accept-encoding", offer.encode("ascii")))
    if isinstance(cookie, str):
        headers.append((b"cookie", cookie.encode("latin-1")))
    forwarded_for = [value for name, value in request.headers if name == b"x-forwarded-for"]
    peer = request.peer or request.client
    if peer:
        forwarded_for.append(peer.encode("latin-1"))
    if forwarded_for:
        headers.append((b"x-forwarded-for", b", ".join(forwarded_for)))
    headers.append((b"x-forwarded-proto", request.scheme.encode("latin-1")))
    headers.append((b"x-forwarded-host", request.host.encode("latin-1")))
    headers.append((b"forwarded", forwarded_field(
        get_all(request.headers, b"forwarded"), request.forwarded_for, peer,
        scheme=request.scheme, host=request.host)))
    previous_via = [value for name, value in request.headers if name == b"via"]
    headers.append((b"via", b", ".join([*previous_via, via])))
    headers.extend(extra)
    return headers


def client_response_headers(origin_headers: Sequence[tuple[bytes, bytes]],
                            hidden: Collection[bytes]) -> Headers:
    """Origin response headers as a client receives them on a pass-through."""
    return without(strip_hop_by_hop(origin_headers), hidden)


def stored_headers(origin_headers: Sequence[tuple[bytes, bytes]], *, strip_set_cookie: bool,
                   hidden: Collection[bytes], body_size: int | None,
                   decoded: bool = False) -> Headers:
    """Origin response headers as the cache stores them.

    ``body_size`` (when the whole body is known) replaces Content-Length so a
    chunked origin response is served with a length from cache.  ``decoded`` (the
    body is stored without its content coding) drops Content-Encoding and makes the
    ETag weak.
    """
    drop = set(NOT_STORED) | set(hidden)
    if decoded:
        drop.add(b"content-encoding")
        origin_headers = weakened(origin_headers)
    if strip_set_cookie:
        drop.add(b"set-cookie")
    if body_size is not None:
        drop.add(b"content-length")
    headers = without(strip_hop_by_hop(origin_headers), drop)
    if body_size is not None:
        headers.append((b"content-length", str(body_size).encode()))
    return headers

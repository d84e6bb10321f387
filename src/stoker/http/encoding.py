"""Content codings: what to compress at store time, and which coding to serve.

Invariants:
- Pure: no I/O, no clock.  :func:`compress` is CPU-bound; callers run it in
  a worker thread, once per stored response, never per hit.
- A response is compressed only when it is a 200 with a compressible type
  (``text/*``, JSON, JavaScript, SVG, XML), more than :data:`MIN_SIZE` bytes,
  no ``Content-Encoding`` of its own (never re-compressed) and no
  ``Cache-Control: no-transform`` (RFC 9110 §7.7).
- A coding is kept only when it is smaller than the identity body.
- :func:`choose_encoding` follows RFC 9110 §12.5.3: q-values rank codings,
  ``q=0`` refuses one, ``*`` stands for codings not named; ties go to the
  smaller coding (br, then gzip, then identity).  Identity is the answer when
  nothing offered is acceptable, and when the request has no
  ``Accept-Encoding`` at all (as nginx does: such clients may not decode).
- :func:`origin_offer` is what a cache fetch sends the origin as
  ``Accept-Encoding``: the codings Stoker can decode (br, gzip) that the client
  accepts, or ``identity``.  So whatever the origin answers, the client that
  asked can read it, and Stoker can decode it for everyone else.
- :func:`stored_coding` names the one content coding of a response Stoker can
  decode (``identity`` when it has none), or None (several, or one it cannot).
- Every served form of an entry with codings carries ``Vary:
  Accept-Encoding``; a coded form carries its own ``Content-Encoding``,
  ``Content-Length`` and an ETag suffixed with the coding (``"abc"`` →
  ``"abc-br"``; a weak ETag stays weak), so a validator names one form only.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from functools import lru_cache

import brotli

from stoker.http.cache_control import parse_cache_control
from stoker.http.headers import HeaderInput, get_joined, vary_names

Header = tuple[bytes, bytes]
Encoded = tuple[tuple[str, bytes], ...]

IDENTITY = "identity"
MIN_SIZE = 1024
PREFERENCE = ("br", "gzip")
"""Codings Stoker stores, best (smallest) first."""
COMPRESSIBLE_TYPES = frozenset({
    "application/json", "application/javascript", "application/x-javascript",
    "application/ecmascript", "application/xml", "application/xhtml+xml",
    "application/rss+xml", "application/atom+xml", "application/ld+json",
    "application/manifest+json", "image/svg+xml",
})
ALIASES = {"x-gzip": "gzip"}  # RFC 9110 §8.4.1.3
BROTLI_QUALITY = 9
GZIP_LEVEL = 6


def compressible(status: int, headers: HeaderInput, size: int) -> bool:
    """Whether a response of ``status``, ``headers`` and ``size`` body bytes gets codings."""
    if status != 200 or size <= MIN_SIZE or get_joined(headers, b"content-encoding"):
        return False
    if parse_cache_control(get_joined(headers, b"cache-control")).no_transform:
        return False
    media = (get_joined(headers, b"content-type") or "").split(";", 1)[0].strip().lower()
    return media.startswith("text/") or media in COMPRESSIBLE_TYPES or (
        media.endswith(("+json", "+xml")))


def compress(body: bytes) -> Encoded:
    """The br and gzip forms of ``body`` that are smaller than it, best first."""
    forms = (("br", brotli.compress(body, quality=BROTLI_QUALITY)),
             ("gzip", gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0)))
    return tuple((name, data) for name, data in forms if len(data) < len(body))


@lru_cache(maxsize=4096)
def choose_encoding(accept_encoding: str | None, available: tuple[str, ...]) -> str:
    """The coding to serve (one of ``available`` or ``identity``) per RFC 9110 §12.5.3."""
    if not accept_encoding or not available:
        return IDENTITY
    weights = _weights(accept_encoding)
    star = weights.get("*")
    best, best_rank = IDENTITY, (-1.0, -1)
    identity_q = weights.get(IDENTITY, star)
    if identity_q is not None and identity_q > 0:
        best_rank = (identity_q, 0)
    for position, name in enumerate(reversed(PREFERENCE), start=1):
        q = weights.get(name, star)
        if name in available and q is not None and q > 0 and (q, position) > best_rank:
            best, best_rank = name, (q, position)
    return best


@lru_cache(maxsize=1024)
def origin_offer(accept_encoding: str | None) -> str:
    """The ``Accept-Encoding`` a cache fetch for a client sending ``accept_encoding``
    sends the origin: ``"br, gzip"``, ``"br"``, ``"gzip"`` or ``"identity"``.  A client
    that sends no Accept-Encoding is offered identity (as nginx reads it)."""
    if not accept_encoding:
        return IDENTITY
    weights = _weights(accept_encoding)
    star = weights.get("*")
    offered = [name for name in PREFERENCE if (weights.get(name, star) or 0.0) > 0]
    return ", ".join(offered) or IDENTITY


DECODABLE = frozenset(PREFERENCE)


def stored_coding(headers: HeaderInput) -> str | None:
    """The content coding of a response with ``headers`` when Stoker can decode it:
    ``identity`` (none), ``gzip`` or ``br``; None for any other or several."""
    value = get_joined(headers, b"content-encoding")
    if value is None:
        return IDENTITY
    codings = [ALIASES.get(name, name) for name in (
        member.strip().lower() for member in value.split(",")) if name and name != IDENTITY]
    if not codings:
        return IDENTITY
    return codings[0] if len(codings) == 1 and codings[0] in DECODABLE else None


def _weights(accept_encoding: str) -> dict[str, float]:
    """Coding → q-value; a malformed q-value counts as 0 and a coding named twice gets
    its lower q (refusal is the safe side)."""
    weights: dict[str, float] = {}
    for item in accept_encoding.split(","):
        name, _, params = item.partition(";")
        name = name.strip().lower()
        if not name:
            continue
        name = ALIASES.get(name, name)
        weights[name] = min(q_value(params), weights.get(name, 1.0))
    return weights


def q_value(params: str) -> float:
    """The q-value among a member's ``;``-separated parameters: 1 without one, 0 for a
    malformed one or one outside 0-1 (refusal is the safe side)."""
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "q":
            try:
                q = float(value.strip())
            except ValueError:
                return 0.0
            return q if 0.0 <= q <= 1.0 else 0.0
    return 1.0


def coded_etag(etag: str, coding: str) -> str:
    """``etag`` for the ``coding`` form: ``"abc"`` → ``"abc-br"``, ``W/"abc"`` → ``W/"abc-br"``."""
    if coding == IDENTITY or not etag.endswith('"'):
        return etag
    return f'{etag[:-1]}-{coding}"'


def weakened(headers: Sequence[Header]) -> list[Header]:
    """``headers`` with a strong ETag made weak (RFC 9110 §8.8.1): for a body Stoker
    changed (decoded), which is the same content but not the same bytes."""
    return [(name, b"W/" + value if name == b"etag" and value.startswith(b'"') else value)
            for name, value in headers]


def served_headers(headers: Sequence[Header], coding: str, length: int) -> tuple[Header, ...]:
    """The stored ``headers`` for the ``coding`` form (``length`` body bytes) of an entry
    that has codings: Vary gains Accept-Encoding; a coded form gets its own
    Content-Encoding, Content-Length and ETag."""
    varies = vary_names(headers)  # every Vary line counts (RFC 9110 §5.3)
    add_vary = varies is not None and "accept-encoding" not in varies
    out: list[Header] = []
    for name, value in headers:
        if coding != IDENTITY and name == b"content-length":
            continue
        if coding != IDENTITY and name == b"etag":
            value = coded_etag(value.decode("latin-1"), coding).encode("latin-1")
        if add_vary and name == b"vary":  # on the first line, as one list: Vary stays one
            value, add_vary = value + b", accept-encoding", False
        out.append((name, value))
    if add_vary:
        out.append((b"vary", b"accept-encoding"))
    if coding != IDENTITY:
        out += ((b"content-encoding", coding.encode("ascii")), (b"content-length", b"%d" % length))
    return tuple(out)


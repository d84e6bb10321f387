"""Cache keys: the primary key of a URL and the secondary key of a variant.

RFC 9111 §2: the primary cache key is the request method and target URI; we
only store GET, so the key is the URI (plus the cache version, which makes a
deploy invalidate everything).  RFC 9111 §4.1: the secondary key is the set of
request header values named by the stored response's ``Vary``.

Invariants:
- :func:`primary_key` is ``f"{version}|{scheme}://{host}{path}?{query}"`` with
  the scheme and host lower-cased, the default port (80 for http, 443 for
  https) removed, an empty path written ``/`` (RFC 9110 §4.2.3), and the query
  canonicalised: split on ``&``, empty members dropped, members whose name
  matches an ``ignore_query`` glob (``fnmatch``, case-sensitive) dropped, the
  rest stably sorted by name, bytes untouched (no percent-decoding).  The
  ``?`` is omitted when no member remains.  Reordering members with distinct
  names never changes the key; members with the same name keep their order
  (their order can matter to the origin).
- :func:`cache_target` is the path and query of :func:`primary_key`: requests
  with one key are sent to the origin as one target.
- :func:`variant_of` is injective on the request's values as normalised by
  :func:`normalise_field_value`: an absent header and an empty header encode
  differently, and quoting makes separators inside values unambiguous.
  ``""`` when nothing varies.  Requests whose values differ only in
  whitespace (and, for Accept-Language, in case or member order) get the same
  variant; Accept-Encoding counts only as the codings a cache fetch would offer the
  origin for it (:func:`~stoker.http.encoding.origin_offer`), since that decides the
  answer.  (A response Stoker can decode is stored without Accept-Encoding in its
  key at all: one copy serves every coding, see :mod:`stoker.proxy.fetch`.)
- Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import Protocol, TypeVar

from .encoding import origin_offer
from .headers import HeaderInput, get_all

DEFAULT_PORTS = {"http": "80", "https": "443"}
"""Each scheme's default port, as a host's port is written."""
_WHITESPACE_RUN = re.compile("[ \t]+")
_TCHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")
_SEPARATORS = frozenset(",;=")


def normalise_host(scheme: str, host: str) -> str:
    """Lower-case ``host`` and drop the scheme's default port (RFC 9110 §4.2.3)."""
    host = host.lower()
    colon = host.rfind(":")
    # A colon inside an IPv6 literal ("[::1]") is not a port separator.
    if colon != -1 and colon > host.rfind("]"):
        port = host[colon + 1 :]
        if port == "" or port == DEFAULT_PORTS.get(scheme.lower()):
            host = host[:colon]
    return host


def canonical_query(query: str, ignore_query: Sequence[str] = ()) -> str:
    """The query members sorted by name, ignored and empty members dropped."""
    if not query:
        return ""
    members = []
    for member in query.split("&"):
        if not member:
            continue
        name = member.split("=", 1)[0]
        if ignore_query and any(fnmatchcase(name, pattern) for pattern in ignore_query):
            continue
        members.append((name, member))
    members.sort(key=lambda pair: pair[0])  # list.sort is stable
    return "&".join(member for _, member in members)


def primary_key(
    *,
    version: str,
    scheme: str,
    host: str,
    path: str,
    query: str,
    ignore_query: Sequence[str] = (),
) -> str:
    """The primary cache key of a GET for this URL.  See module invariants."""
    scheme = scheme.lower()
    query = canonical_query(query, ignore_query)
    base = f"{version}|{scheme}://{normalise_host(scheme, host)}{path or '/'}"
    return f"{base}?{query}" if query else base


def cache_target(path: str, query: str, ignore_query: Sequence[str] = ()) -> str:
    """The request target a cache fetch sends the origin: the path and the query as
    :func:`primary_key` has them, so the origin never sees what the key leaves out (an
    ``ignore_query`` member would otherwise be served to every visitor of the clean URL)."""
    query = canonical_query(query, ignore_query)
    return f"{path or '/'}?{query}" if query else path or "/"


def url_from_parts(scheme: str, host: str, path: str, query: str) -> str:
    """The absolute URL, host normalised as in the key, query as given."""
    scheme = scheme.lower()
    url = f"{scheme}://{normalise_host(scheme, host)}{path or '/'}"
    return f"{url}?{query}" if query else url


def normalise_field_value(name: str, values: Sequence[bytes]) -> str:
    """The request's field lines for ``name`` as :func:`variant_of` compares them.

    RFC 9111 §4.1 lets a cache normalise values "in a way that is known to
    have identical semantics".  Lines are combined with ``,`` (RFC 9110 §5.3).
    Accept-Encoding becomes the offer a cache fetch would send the origin for it.
    Accept-Language (whose grammar has no quoted-strings) is lower-cased (language
    tags are case-insensitive), loses all whitespace and empty members, and has its
    members sorted: member order carries no meaning, the weights do.  Any other field
    keeps its case and order; outside quoted-strings a run of SP/HTAB becomes one SP
    and whitespace next to ``,``, ``;`` or ``=`` and at either end is dropped.
    """
    text = ",".join(value.decode("latin-1") for value in values)
    if name.lower() == "accept-encoding":
        return origin_offer(text)
    if name.lower() == "accept-language":
        members = (_WHITESPACE_RUN.sub("", member).lower() for member in text.split(","))
        return ",".join(sorted(member for member in members if member))
    return _squeeze_whitespace(text)


def _squeeze_whitespace(text: str) -> str:
    # Only SP / HTAB are whitespace (RFC 9110 §5.6.3); str.split() would also
    # fold e.g. NBSP (0xA0).  Quoted-strings (RFC 9110 §5.6.4) are kept verbatim.
    out: list[str] = []
    space = in_quote = escaped = False
    for char in text:
        if in_quote:
            out.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_quote = False
        elif char in " \t":
            space = True
        elif char in _SEPARATORS:
            space = False
            out.append(char)
        else:
            if space and out and out[-1] not in _SEPARATORS:
                out.append(" ")
            space = False
            in_quote = char == '"'
            out.append(char)
    return "".join(out)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def variant_of(vary: Sequence[str], request_headers: HeaderInput) -> str:
    """A canonical encoding of the request's values for the ``vary`` names.

    Each name gives ``name="value"`` (value quoted, ``\\`` and ``"`` escaped)
    or just ``name`` when the request lacks the header; members are joined
    with ``"; "`` in sorted name order.  Names that are not tokens are quoted
    too, so the encoding stays unambiguous whatever is passed.
    """
    if not vary:
        return ""
    parts = []
    for name in sorted({name.lower() for name in vary}):
        label = name if name and all(char in _TCHARS for char in name) else _quote(name)
        values = get_all(request_headers, name.encode("latin-1", "replace"))
        if values:
            parts.append(f"{label}={_quote(normalise_field_value(name, values))}")
        else:
            parts.append(label)
    return "; ".join(parts)


class VariantEntry(Protocol):
    """What :func:`select_variant` needs of a stored entry."""

    @property
    def vary(self) -> tuple[str, ...]: ...

    @property
    def variant(self) -> str: ...

    @property
    def response_time(self) -> float: ...


E = TypeVar("E", bound=VariantEntry)


def select_variant(entries: Sequence[E], request_headers: HeaderInput) -> E | None:
    """The most recent entry whose variant matches the request (RFC 9111 §4.1).

    "Most recent" is the greatest ``response_time``; on a tie the earlier
    entry in ``entries`` wins.
    """
    best: E | None = None
    computed: dict[tuple[str, ...], str] = {}
    for entry in entries:
        vary = entry.vary
        wanted = computed.get(vary)
        if wanted is None:
            wanted = computed[vary] = variant_of(vary, request_headers)
        if entry.variant == wanted and (best is None or entry.response_time > best.response_time):
            best = entry
    return best


def variants_to_drop(stored: Sequence[str], new: str, limit: int) -> list[str]:
    """The variants to forget so that storing ``new`` leaves at most ``limit``.

    ``stored`` is ordered least recently used first; ``new`` replacing a
    stored variant adds nothing.  The oldest others go first.
    """
    others = [variant for variant in dict.fromkeys(stored) if variant != new]
    excess = len(others) + 1 - max(1, limit)
    return others[:excess] if excess > 0 else []

"""ASGI-style header lists: lookup, joining and hop-by-hop stripping.

Headers are ``list[tuple[bytes, bytes]]`` (name, value) as in ASGI.

Invariants:
- Functions never mutate their input; every function returning a list returns
  a new list, preserving the relative order of the fields it keeps.
- Name matching is case-insensitive (RFC 9110 §5.1): the queried name and the
  field names are compared lower-cased, so callers may pass either case.
- Several field lines of one list-valued field are one list (RFC 9110 §5.3):
  :func:`get_joined` and :func:`field_members` read every line, never the first alone.
- Field values are returned byte-for-byte as received; :func:`get_joined`
  decodes them as ISO-8859-1 (RFC 9110 §5.5: field values are octets, and
  latin-1 maps every octet to exactly one code point, so it never fails).
- Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

Headers = list[tuple[bytes, bytes]]
HeaderInput = Sequence[tuple[bytes, bytes]]

# RFC 9110 §7.6.1 (Connection and the fields it names), §7.8 (Upgrade),
# §10.1.4 (TE), §6.6.2 (Trailer), §11.7.1-2 (Proxy-Authenticate/-Authorization),
# RFC 9112 §6.1 (Transfer-Encoding); keep-alive / proxy-connection are the
# legacy HTTP/1.0 connection fields (RFC 9110 §7.6.1 lists them as examples).
HOP_BY_HOP: frozenset[bytes] = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"proxy-authenticate",
        b"proxy-authorization",
    }
)


def get_header(headers: HeaderInput, name: bytes) -> bytes | None:
    """The value of the first field line called ``name``, or None."""
    wanted = name.lower()
    for key, value in headers:
        if key == wanted or key.lower() == wanted:
            return value
    return None


def get_all(headers: HeaderInput, name: bytes) -> list[bytes]:
    """Every value of the field lines called ``name``, in order."""
    wanted = name.lower()
    return [value for key, value in headers if key == wanted or key.lower() == wanted]


def set_cookie_names(headers: HeaderInput) -> list[str]:
    """The names of the cookies the ``Set-Cookie`` fields set (RFC 6265 §4.1: the text
    before the first ``=``), in order, never their values."""
    return [value.split(b"=", 1)[0].strip().decode("latin-1")
            for value in get_all(headers, b"set-cookie")]


def get_joined(headers: HeaderInput, name: bytes) -> str | None:
    """All field lines called ``name`` combined with ``", "`` (RFC 9110 §5.3).

    Decoded as latin-1; None when the field is absent.  A present but empty
    field gives ``""``.
    """
    values = get_all(headers, name)
    if not values:
        return None
    return b", ".join(values).decode("latin-1")


def lower_joined(headers: Sequence[tuple[bytes, bytes]], name: bytes) -> str | None:
    """:func:`get_joined` for lower-case ``name`` in a list of
    lower-case names: one scan, nothing lower-cased (the fast path's one field)."""
    found: bytes | None = None
    for key, value in headers:
        if key == name:
            found = value if found is None else found + b", " + value
    return None if found is None else found.decode("latin-1")


def field_members(headers: HeaderInput, name: bytes) -> list[str]:
    """The members of the list-valued field ``name`` (RFC 9110 §5.6.1): every field line
    called ``name`` is part of one list (§5.3), split at commas outside quoted strings;
    members are stripped of whitespace, empty ones dropped.  Decoded as latin-1.  Every
    list-valued field Stoker reads a member at a time (``Vary``, ``Connection``) is read
    here, so two lines always mean what their join means."""
    members: list[str] = []
    for value in get_all(headers, name):
        members.extend(_split_members(value.decode("latin-1")))
    return members


def vary_names(headers: HeaderInput) -> tuple[str, ...] | None:
    """The field names a response varies on, lower-cased, de-duplicated and sorted, from
    every ``Vary`` line; ``()`` when there is none; None for ``*`` (RFC 9110 §12.5.5:
    never matches, RFC 9111 §4.1)."""
    names = {member.lower() for member in field_members(headers, b"vary")}
    return None if "*" in names else tuple(sorted(names))


def _split_members(text: str) -> list[str]:
    members, start, quoted, escaped = [], 0, False, False
    for index, char in enumerate(text):
        if escaped:
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            members.append(text[start:index])
            start = index + 1
    members.append(text[start:])
    return [member.strip(" \t") for member in members if member.strip(" \t")]


def content_length(headers: HeaderInput) -> int | None:
    """The ``Content-Length`` a message declares, or None when it declares none (or one
    that is not a plain number)."""
    value = get_header(headers, b"content-length")
    if value is None:
        return None
    value = value.strip()
    return int(value) if value.isdigit() else None


def connection_tokens(headers: HeaderInput) -> frozenset[bytes]:
    """The lower-cased field names listed in ``Connection`` (RFC 9110 §7.6.1)."""
    return frozenset(member.lower().encode("latin-1")
                     for member in field_members(headers, b"connection"))


def strip_hop_by_hop(headers: HeaderInput) -> Headers:
    """Drop hop-by-hop fields and every field named in ``Connection``.

    RFC 9110 §7.6.1: a proxy MUST remove the Connection field and the fields it
    lists before forwarding; RFC 9111 §3.1: a cache MUST NOT store them.
    """
    drop = HOP_BY_HOP | connection_tokens(headers)
    return [(key, value) for key, value in headers if key.lower() not in drop]


def without(headers: HeaderInput, names: Collection[bytes]) -> Headers:
    """A copy of ``headers`` without the fields called any of ``names``."""
    drop = frozenset(name.lower() for name in names)
    return [(key, value) for key, value in headers if key.lower() not in drop]

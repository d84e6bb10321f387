"""Conditional requests: answering them from cache, making them to the origin,
and folding a 304 into the stored response.

Invariants:
- :func:`should_answer_not_modified` implements RFC 9110 §13.2.2 steps 3-4
  for GET/HEAD (the caller checks the method): If-None-Match, when present,
  decides alone; If-Modified-Since is considered only without it.  It never
  raises on malformed input: a malformed If-None-Match member matches
  nothing, a malformed or multi-valued If-Modified-Since is ignored.
  If-Modified-Since is compared with Last-Modified, or with the stored
  ``Date`` when there is no Last-Modified (RFC 9110 §13.1.3); a present but
  invalid Last-Modified does not fall back to Date.
- :func:`precondition_failed` implements steps 1-2 (If-Match, then
  If-Unmodified-Since only without it): a hit that fails them gets 412 before
  steps 3-4 are looked at.  It never raises on malformed input.
- :func:`revalidation_headers` never emits a value containing CR, LF or NUL
  (a stored validator cannot smuggle a header into the origin request).
- :func:`merge_not_modified` never lets the 304 change the framing or coding
  of the stored body (content-length, content-encoding, transfer-encoding,
  content-range), never stores hop-by-hop fields, ``Age`` (computed when
  served) or ``Set-Cookie`` (a stored response never carries cookies, see
  ``policy``; a cookie on a 304 is for that one client only).
- Pure: no I/O, no clock.
"""

from __future__ import annotations

from .dates import parse_http_date
from .headers import HeaderInput, Headers, get_all, get_joined, strip_hop_by_hop

# RFC 9110 §15.4.5: fields a 304 carries (Last-Modified: "might be useful if
# the response does not have an ETag field").
NOT_MODIFIED_FIELDS: frozenset[bytes] = frozenset(
    {
        b"cache-control",
        b"content-location",
        b"date",
        b"etag",
        b"expires",
        b"vary",
        b"last-modified",
    }
)

# RFC 9111 §3.2 exceptions when updating stored header fields, plus Age and
# Set-Cookie (see module invariants).  Hop-by-hop fields are stripped first.
_NOT_MERGED: frozenset[bytes] = frozenset(
    {
        b"content-length",
        b"content-encoding",
        b"transfer-encoding",
        b"content-range",
        b"age",
        b"set-cookie",
    }
)


def parse_etag_list(value: str) -> tuple[list[str], bool]:
    """Parse an If-None-Match / If-Match value into opaque tags (RFC 9110 §8.8.3).

    Returns ``(opaque_tags, any)`` where ``any`` is True for ``*``.  Weakness
    prefixes are dropped (for weak comparison); quotes are removed.  Leniently, an
    unquoted member is taken whole as an opaque tag.
    """
    members, any_tag = parse_entity_tags(value)
    return [tag for _, tag in members], any_tag


def parse_entity_tags(value: str) -> tuple[list[tuple[bool, str]], bool]:
    """:func:`parse_etag_list` keeping each member's weakness: ``((weak, opaque_tag)
    ..., any)``; an unquoted member counts as weak (it is no strong validator)."""
    if value.strip(" \t") == "*":
        return [], True
    tags: list[tuple[bool, str]] = []
    index = 0
    length = len(value)
    while index < length:
        while index < length and value[index] in ", \t":
            index += 1
        if index >= length:
            break
        weak = value.startswith("W/", index)
        if weak:
            index += 2
        if index < length and value[index] == '"':
            end = value.find('"', index + 1)
            if end == -1:  # unterminated: malformed, matches nothing
                break
            tags.append((weak, value[index + 1 : end]))
            index = end + 1
        else:
            end = value.find(",", index)
            end = length if end == -1 else end
            member = value[index:end].strip(" \t")
            if member == "*":
                return [], True
            if member:
                tags.append((True, member))
            index = end
        # Skip anything up to the next list separator.
        while index < length and value[index] != ",":
            index += 1
    return tags, False


def opaque_tag(etag: str) -> str:
    """The opaque-tag of an entity-tag, without ``W/`` and quotes."""
    etag = etag.strip(" \t")
    if etag.startswith("W/"):
        etag = etag[2:]
    if len(etag) >= 2 and etag[0] == '"' and etag[-1] == '"':
        etag = etag[1:-1]
    return etag


def should_answer_not_modified(
    request_headers: HeaderInput,
    *,
    etag: str | None,
    last_modified: str | None,
    date: str | None = None,
) -> bool:
    """True when a GET/HEAD should get 304 for a stored response with these validators.

    ``date`` is the stored response's Date: without a Last-Modified, RFC 9110
    §13.1.3 lets a cache compare If-Modified-Since with it instead.
    """
    if_none_match = get_joined(request_headers, b"if-none-match")
    if if_none_match is not None:
        # RFC 9110 §13.1.2: "*" is false (→ 304) when a current representation
        # exists, which it does: we hold one.  Otherwise weak comparison
        # (§8.8.3.2) against the stored ETag.
        tags, any_tag = parse_etag_list(if_none_match)
        if any_tag:
            return True
        if etag is None:
            return False
        stored = opaque_tag(etag)
        return stored in tags

    if_modified_since = get_all(request_headers, b"if-modified-since")
    # RFC 9110 §13.1.3: ignore an invalid date or one with more than one member.
    if len(if_modified_since) != 1:
        return False
    since = parse_http_date(if_modified_since[0])
    modified = parse_http_date(last_modified if last_modified is not None else date)
    if since is None or modified is None:
        return False
    return modified <= since


def precondition_failed(
    request_headers: HeaderInput, *, etag: str | None, last_modified: str | None,
) -> bool:
    """True when a GET/HEAD answered from a stored 2xx response with these validators
    must get ``412`` (RFC 9110 §13.2.2 steps 1-2, as nginx evaluates them on cached
    responses; RFC 9111 §4.3.2 leaves them to the origin, which a cache hit never asks).

    If-Match, when present, decides alone: ``*`` holds (a current representation is
    stored), else it holds only when a member matches the stored ETag by strong
    comparison (RFC 9110 §8.8.3.2: neither weak, same opaque tag), so a weak or missing
    stored ETag fails it.  Without If-Match, If-Unmodified-Since fails when
    Last-Modified is later than its date; an invalid or multi-valued date, or no valid
    Last-Modified, is ignored (§13.1.4).  Never raises on malformed input.
    """
    if_match = get_joined(request_headers, b"if-match")
    if if_match is not None:
        tags, any_tag = parse_entity_tags(if_match)
        if any_tag:
            return False
        if etag is None or etag.lstrip(" \t").startswith("W/"):
            return True
        stored = opaque_tag(etag)
        return not any(not weak and tag == stored for weak, tag in tags)
    if_unmodified_since = get_all(request_headers, b"if-unmodified-since")
    if len(if_unmodified_since) != 1:
        return False
    since = parse_http_date(if_unmodified_since[0])
    modified = parse_http_date(last_modified) if last_modified is not None else None
    if since is None or modified is None:
        return False
    return modified > since


def _safe_value(value: str) -> bytes | None:
    if any(char in value for char in "\r\n\0"):
        return None
    encoded = value.strip(" \t").encode("latin-1", "replace")
    return encoded or None


def revalidation_headers(*, etag: str | None, last_modified: str | None) -> Headers:
    """Header fields for a conditional GET validating a stored response.

    RFC 9111 §4.3.1: send the entity tag (If-None-Match) when one was stored,
    and the Last-Modified value (If-Modified-Since) when one was stored.
    """
    headers: Headers = []
    if etag is not None:
        value = _safe_value(etag)
        if value is not None:
            headers.append((b"if-none-match", value))
    if last_modified is not None:
        value = _safe_value(last_modified)
        if value is not None:
            headers.append((b"if-modified-since", value))
    return headers


def not_modified_headers(stored: HeaderInput) -> Headers:
    """The stored fields a 304 answered from cache carries (RFC 9110 §15.4.5)."""
    return [(name, value) for name, value in stored if name.lower() in NOT_MODIFIED_FIELDS]


def merge_not_modified(stored: HeaderInput, fresh_304_headers: HeaderInput) -> Headers:
    """The stored fields updated with those of a 304 (RFC 9111 §4.3.4, §3.2).

    Every field present in the 304 replaces all stored lines of that name
    (the replaced fields are appended after the kept ones), except the
    fields listed in the module invariants.
    """
    update = [
        (name.lower(), value)
        for name, value in strip_hop_by_hop(fresh_304_headers)
        if name.lower() not in _NOT_MERGED
    ]
    replaced = {name for name, _ in update}
    kept = [(name, value) for name, value in stored if name.lower() not in replaced]
    return kept + update

"""The request's ``Cookie`` as one field line, without Stoker's own cookies.  Pure.

A browser sends a host's cookies to every port of it (RFC 6265 §8.5: cookies do not
isolate by port), so a dashboard login on the admin listener (``:8081``) rides along on
every request to the public one (``:8080``).  The admin session cookie is Stoker's
credential: it must never reach the origin, nor count as a visitor's cookie.

Invariants of :func:`one_cookie_field`:
- At most one ``Cookie`` line comes out, where the first one was: several lines (HTTP/2
  and HTTP/3 send cookies as separate crumbs, RFC 9113 §8.2.3, RFC 9114 §4.2.1) are
  joined with ``"; "``, never ``", "``, since an HTTP/1.1 request may carry only one
  (RFC 6265 §5.4).
- No cookie named in ``dropped`` (by default :data:`OWN_COOKIES`) is left; names
  compare exactly (cookie names are case-sensitive).  A line left empty disappears.
- Every other cookie keeps its bytes and its order; a request with one ``Cookie`` line
  and nothing to drop is returned as it came (the same list, the line untouched).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from stoker.http.headers import Headers

SESSION_COOKIE: Final = "stoker_session"
"""The admin session cookie over plain HTTP."""
SECURE_SESSION_COOKIE: Final = "__Host-" + SESSION_COOKIE
"""The admin session cookie over HTTPS: ``__Host-`` makes a browser refuse it unless it
is ``Secure``, has ``Path=/`` and no ``Domain`` (so no other host or plain-HTTP page can
set or shadow it)."""
OWN_COOKIES: Final = frozenset({SESSION_COOKIE.encode(), SECURE_SESSION_COOKIE.encode()})
"""Stoker's own cookies, by every name they are set under: never forwarded."""


def session_cookie_name(secure: bool) -> str:
    """The admin session cookie's name on a connection that is (``secure``) or is not
    HTTPS."""
    return SECURE_SESSION_COOKIE if secure else SESSION_COOKIE


def one_cookie_field(headers: Headers, dropped: Collection[bytes] = OWN_COOKIES) -> Headers:
    """``headers`` with one ``Cookie`` line at most and no cookie named in ``dropped``
    (see the module invariants)."""
    lines = [index for index, (name, _) in enumerate(headers) if name.lower() == b"cookie"]
    if not lines or (len(lines) == 1 and not any(
            name in headers[lines[0]][1] for name in dropped)):
        return headers
    pairs = [pair.strip() for index in lines for pair in headers[index][1].split(b";")]
    kept = [pair for pair in pairs
            if pair and pair.partition(b"=")[0].strip() not in dropped]
    if len(lines) == 1 and len(kept) == len(pairs):
        return headers  # a dropped name was only part of another's name or value
    later = frozenset(lines[1:])
    out = [field for index, field in enumerate(headers) if index not in later]
    if kept:
        out[lines[0]] = (headers[lines[0]][0], b"; ".join(kept))
    else:
        del out[lines[0]]
    return out


"""HTTP/1.1 response heads as bytes on the wire (RFC 9112 §4, §5).  Pure.

The one renderer of Stoker's response heads: the front's ASGI exchange writes every head
with it, and the heads stored in L2 rows and answered by the front's hits are its output.

Invariant: :func:`http1_head` writes the status line with the standard reason phrase,
then each header as ``name: value`` with the name lower-cased, in order, without the
blank line that ends the head (the framing fields the front adds follow it); and it
refuses (``None``) any name with a separator or control byte, any value with a control
byte other than tab, and empty names, so nothing can be smuggled into the head.
"""

from __future__ import annotations

import http
import re
from collections.abc import Sequence
from functools import cache

_BAD_NAME = re.compile(b'[\x00-\x1f\x7f()<>@,;:\\[\\]={} \t\\\\"]')
_BAD_VALUE = re.compile(b"[\x00-\x08\x0a-\x1f\x7f]")


@cache  # a few dozen statuses at most; one enum lookup each, not one per response
def status_line(status: int) -> bytes:
    """``HTTP/1.1 200 OK\\r\\n`` (an unknown status gets an empty reason phrase)."""
    try:
        phrase = http.HTTPStatus(status).phrase.encode()
    except ValueError:
        phrase = b""
    return b"HTTP/1.1 %d %s\r\n" % (status, phrase)


def http1_head(status: int, headers: Sequence[tuple[bytes, bytes]]) -> bytes | None:
    """The status line and ``headers`` as written, or ``None`` when one is not writable.

    Every name and every value is checked: a byte is refused in the concatenation of all
    names (values) exactly when it is refused in one of them, so two searches do it."""
    each = [name for name, _ in headers]
    names = b"".join(each)
    if not all(each) or _BAD_NAME.search(names) or (
            _BAD_VALUE.search(b"".join([value for _, value in headers]))):
        return None
    if names != names.lower():  # stored headers are lower-cased already
        headers = [(name.lower(), value) for name, value in headers]
    return status_line(status) + b"".join([b"%s: %s\r\n" % header for header in headers])

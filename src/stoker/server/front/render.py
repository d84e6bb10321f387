"""A :class:`~stoker.proxy.reply.Reply` with a whole body as HTTP/1.1 bytes: the front's
one renderer of replies (the hits it answers without an exchange).

Invariant: :func:`reply_bytes` writes byte for byte what the front's exchange
(:mod:`~stoker.server.front.exchange`) writes for the same reply on a proxy listener,
delivered by :func:`~stoker.adapters.core.write_reply` (from the request core, or as the ASGI
messages of :func:`~stoker.adapters.asgi_reply.send_reply`): the head of
:func:`~stoker.http.wire.http1_head` for the reply's fields, ``Connection: close`` when
the connection closes after it, then the body; a reply whose fields are a stored entry's
own list reuses that entry's head (made once per entry), and one with a field that is
not writable is not rendered (``None``: the exchange refuses it too).
"""

from __future__ import annotations

from collections.abc import Sequence

from stoker.http.wire import http1_head
from stoker.proxy.reply import Reply

CLOSE = b"connection: close\r\n"


def reply_bytes(reply: Reply, *, close: bool) -> list[bytes] | None:
    """The whole response for ``reply`` (its body bytes, its ``Content-Length`` among its
    fields), ``Connection: close`` included when ``close``; ``None`` if not writable."""
    entry = reply.entry
    head = entry.wire_head() if entry is not None and reply.headers is entry.headers else (
        http1_head(reply.status, reply.headers))
    body = reply.body
    if head is None or not isinstance(body, bytes):
        return None
    return [head, _tail(reply.extra, CLOSE if close else b""), body]


def _tail(extra: Sequence[tuple[bytes, bytes]], close: bytes) -> bytes:
    """``extra`` as field lines, then ``close``, then the blank line ending the head."""
    if len(extra) == 3:  # every hit's Age, Cache-Status and Via: one format, not four
        (age, age_value), (status, status_value), (via, via_value) = extra
        return b"%s: %s\r\n%s: %s\r\n%s: %s\r\n%s\r\n" % (
            age, age_value, status, status_value, via, via_value, close)
    return b"".join([b"%s: %s\r\n" % field for field in extra]) + close + b"\r\n"

"""The request core over ASGI: a scope in (:func:`answer`), a
:class:`~stoker.proxy.reply.Reply` out as ASGI messages (:func:`send_reply`).

Invariants: those of :mod:`~stoker.adapters.core`, the ASGI way: a client gone away is a
``send`` that raises; an unended body is a last message with ``more_body`` set (its
head sent first, even with no body byte yet: the client sees what Stoker's own front
sends, never a server's 500); the request context of a request read from a scope
carries the scope (an in-process origin's app is called with it).
"""

from __future__ import annotations

from stoker.adapters.core import reply_to, write_reply
from stoker.asgi import Message, Receive, Send
from stoker.origin.context import RequestContext
from stoker.proxy.pipeline import Pipeline
from stoker.proxy.reply import Headers, Reply
from stoker.proxy.request import LookedUp, head_of
from stoker.proxy.request_body import asgi_body


async def answer(pipeline: Pipeline, scope: Message, receive: Receive, send: Send, *,
                 looked_up: LookedUp | None = None,
                 context: RequestContext | None = None) -> Reply:
    """Answer one ASGI HTTP request through ``pipeline`` (``looked_up``: what the fast path
    read from L2 for it; ``context``: its request context, else a visitor's with the
    scope); the reply it was sent."""
    reply = await reply_to(pipeline, head_of(scope), asgi_body(receive),
                           context=RequestContext(scope=scope) if context is None else context,
                           looked_up=looked_up)
    await send_reply(send, reply, head=scope.get("method") == "HEAD",
                     http1=str(scope.get("http_version", "1.1")).startswith("1"))
    return reply


async def send_reply(send: Send, reply: Reply, *, head: bool, http1: bool) -> None:
    """Send ``reply`` as ASGI messages (see the module invariants)."""
    await write_reply(reply, AsgiWriter(send), head=head, http1=http1)


class AsgiWriter:
    """A :class:`~stoker.adapters.core.ReplyWriter` sending ASGI messages."""

    __slots__ = ("_send",)

    def __init__(self, send: Send) -> None:
        self._send = send

    async def write_head(self, status: int, headers: Headers) -> None:
        await self._send({"type": "http.response.start", "status": status,
                          "headers": headers})

    async def write_body(self, piece: bytes, *, more: bool) -> None:
        await self._send({"type": "http.response.body", "body": piece, "more_body": more})

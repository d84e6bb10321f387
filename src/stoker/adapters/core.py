"""The request core as every server calls it: a request's head and body in
(:func:`reply_to`), its :class:`~stoker.proxy.reply.Reply` out through a
:class:`ReplyWriter` (:func:`write_reply`): as ASGI messages
(:func:`~stoker.adapters.asgi_reply.send_reply`), or as bytes by Stoker's own front
(:class:`~stoker.server.front.exchange.Exchange`).

Invariants: a head the core cannot read gets the core's refusal
(:meth:`~stoker.proxy.pipeline.Pipeline.refusal`), never an exception, shown to the live
request log's watchers, if any; a HEAD's reply is
delivered without its body (a streamed one is closed unread); a reply's body is delivered
at the pace the writer takes it and its stream is closed however the delivery ends; a
client gone away (the writer raises ``OSError`` or ``RuntimeError``) ends the delivery
quietly; a body stream that raises leaves the response unended, so the server drops the
connection rather than pass a truncated body off as whole (its head written first, even
with no body byte yet); a refusal's reply on HTTP/1 says ``Connection: close``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from stoker.origin.context import RequestContext
from stoker.origin.port import OriginError
from stoker.proxy.log_record import refused
from stoker.proxy.pipeline import Pipeline
from stoker.proxy.reply import Headers, Reply
from stoker.proxy.request import (
    BadRequest,
    LookedUp,
    RequestHead,
    parse_request,
    visitor_address,
)

CLOSE = (b"connection", b"close")


async def reply_to(pipeline: Pipeline, head: RequestHead, body: AsyncIterator[bytes], *,
                   context: RequestContext | None = None,
                   looked_up: LookedUp | None = None) -> Reply:
    """``pipeline``'s reply to the request read as ``head`` whose body is ``body``
    (``context``: its request context, else a visitor's; ``looked_up``: what the fast path
    read from L2 for it)."""
    config = pipeline.config
    try:
        request = parse_request(head, config.default_host, config.trusted, context=context,
                                looked_up=looked_up, kept=config.kept_overrides)
    except BadRequest as error:
        reply = pipeline.refusal(error)
        if pipeline.tap.watched:
            pipeline.tap.publish(refused(
                head, reply, visitor_address(head.peer, head.headers, config.trusted),
                at=pipeline.clock.now(), redact=config.log_redact_query))
        return reply
    return await pipeline.serve(request, body)


class ReplyWriter(Protocol):
    """Where :func:`write_reply` writes a reply: its head, then its body in pieces."""

    async def write_head(self, status: int, headers: Headers) -> None:
        """The status and every field (the server adds its framing)."""

    async def write_body(self, piece: bytes, *, more: bool) -> None:
        """A piece of the body (``more``: not the last one)."""


async def write_reply(reply: Reply, writer: ReplyWriter, *, head: bool,
                      http1: bool) -> None:
    """Write ``reply`` (``head``: to a HEAD request; ``http1``: over HTTP/1) through
    ``writer`` (see the module invariants)."""
    headers = reply.fields()
    if reply.close and http1:
        headers.append(CLOSE)
    body = reply.body
    try:
        await writer.write_head(reply.status, headers)
        if isinstance(body, bytes) or head:
            await writer.write_body(b"" if head or not isinstance(body, bytes) else body,
                                    more=False)
            return
        sent = False
        try:
            async for piece in body:
                await writer.write_body(piece, more=True)
                sent = True
        except OriginError:  # the body broke off: the head goes out (a server that holds it
            if not sent:     # until a body message, granian, would answer 500 instead)
                await writer.write_body(b"", more=True)
            return  # unended: the server drops the connection
        await writer.write_body(b"", more=False)
    except (OSError, RuntimeError):  # the client went away
        return
    finally:
        if not isinstance(body, bytes):
            await body.aclose()

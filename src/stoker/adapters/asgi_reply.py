"""The request core over ASGI: a scope in (:func:`answer`), a
:class:`~stoker.proxy.reply.Reply` out as ASGI messages (:func:`send_reply`).

Invariants: a HEAD's reply is sent without its body (a streamed one is closed unread);
a reply's body is sent at the pace ``send`` takes it and its stream is closed however the
sending ends; a client gone away (``send`` raises) ends the sending quietly; a body
stream that raises leaves the response unended, so the server drops the connection
rather than pass a truncated body off as whole (its head sent first, even with no body
byte yet: the client sees what Stoker's own front sends, never a server's 500); a
refusal's reply on HTTP/1 says ``Connection: close``.
"""

from __future__ import annotations

from stoker.asgi import Message, Receive, Send
from stoker.origin.context import RequestContext
from stoker.origin.port import OriginError
from stoker.proxy.pipeline import Pipeline
from stoker.proxy.reply import Reply
from stoker.proxy.request import BadRequest, LookedUp, parse_request
from stoker.proxy.request_body import asgi_body


async def answer(pipeline: Pipeline, scope: Message, receive: Receive, send: Send, *,
                 looked_up: LookedUp | None = None,
                 context: RequestContext | None = None) -> Reply:
    """Answer one ASGI HTTP request through ``pipeline`` (``looked_up``: what the fast path
    read from L2 for it; ``context``: its request context, else a visitor's with the
    scope); the reply it was sent."""
    try:
        config = pipeline.config
        request = parse_request(scope, config.default_host, config.trusted, context=context,
                                looked_up=looked_up, kept=config.kept_overrides)
    except BadRequest as error:
        reply = pipeline.refusal(error)
    else:
        reply = await pipeline.serve(request, asgi_body(receive))
    await send_reply(send, reply, head=scope.get("method") == "HEAD",
                     http1=str(scope.get("http_version", "1.1")).startswith("1"))
    return reply


async def send_reply(send: Send, reply: Reply, *, head: bool, http1: bool) -> None:
    """Send ``reply`` as ASGI messages (see the module invariants)."""
    headers = reply.fields()
    if reply.close and http1:
        headers.append((b"connection", b"close"))
    body = reply.body
    try:
        await send({"type": "http.response.start", "status": reply.status,
                    "headers": headers})
        if isinstance(body, bytes) or head:
            await send({"type": "http.response.body",
                        "body": b"" if head or not isinstance(body, bytes) else body,
                        "more_body": False})
            return
        sent = False
        try:
            async for piece in body:
                await send({"type": "http.response.body", "body": piece, "more_body": True})
                sent = True
        except OriginError:  # the body broke off: the head goes out (a server that holds it
            if not sent:     # until a body message, granian, would answer 500 instead)
                await send({"type": "http.response.body", "body": b"", "more_body": True})
            return  # unended: the server drops the connection
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except (OSError, RuntimeError):  # the client went away
        return
    finally:
        if not isinstance(body, bytes):
            await body.aclose()

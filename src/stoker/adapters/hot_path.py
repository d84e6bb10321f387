"""The fresh-hit fast path: answer the commonest request with the least work.

A plain ``GET`` (no cookies, credentials, cache directives or conditionals)
whose URL holds exactly one variant, fresh in L1 (or in L2, read once and
promoted), is answered here (a :class:`~stoker.proxy.reply.Reply` of its own, sent by
the one ASGI renderer, or rendered to bytes by the front: at once, or, for an L2 that
must be waited for, after :meth:`HotPath.reply_later`); everything else returns
``False`` and goes through the full
:class:`~stoker.proxy.pipeline.Pipeline`, which gives the same answer more
slowly (with what was read from L2 on the way, :attr:`Attempt.looked_up`, so it reads
no more).  This module decides nothing the pipeline would decide differently:
it only skips work whose outcome is known.

Invariants: the memo maps ``(keying, scheme, Host, target)`` — the
scheme as the pipeline resolves it (trusted proxies' ``X-Forwarded-Proto``
included), the target as sent (``raw_path``, else ``path``, and the query) — to
the primary key :meth:`~stoker.proxy.keying.Keying.key_for` computes for the parsed
request, so the fast path and the pipeline share one key function; a version bump or a
reloaded configuration (:attr:`~stoker.proxy.keying.Keying.token`) never reads old keys.
The memo holds at most ``config.memory.memo_keys`` keys (its share of ``l1_max_bytes``);
when full, the oldest key leaves first; URLs whose rule bypasses the cache map to
``None`` and always take the full pipeline.  The
reply (headers, ``Age``, ``Cache-Status``, ``Via``) is the one the
pipeline would give for the same hit, in the same coding
(:func:`~stoker.proxy.hit.hit_reply`, the one decider); a hit that would get a coding
not made yet (:func:`~stoker.proxy.hit.form_for`) is left to the
pipeline, which makes it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from stoker.adapters.asgi_reply import send_reply
from stoker.asgi import Message, Send
from stoker.cache.entry import CacheEntry
from stoker.config.rules import match_rule
from stoker.http.headers import lower_joined
from stoker.proxy.hit import FAST_HIT, hit_reply
from stoker.proxy.log_record import fast_hit
from stoker.proxy.pipeline import Pipeline
from stoker.proxy.reply import Reply
from stoker.proxy.request import (
    HTTP_VERSIONS,
    MAX_HEADER_BYTES,
    MAX_HEADERS,
    BadRequest,
    LookedUp,
    RequestHead,
    head_of,
    parse_request,
    peer_of,
    visitor_address,
    visitor_scheme,
)

MemoKey = tuple[str, str, bytes, bytes]


# Any of these makes a request need the full pipeline (bypass, revalidation, 304s, 412s; a
# Transfer-Encoding the pipeline may refuse, HTTP/1.0's).
SLOW_HEADERS = frozenset({b"authorization", b"cookie", b"cache-control", b"pragma",
                          b"if-none-match", b"if-modified-since", b"if-match",
                          b"if-unmodified-since", b"range", b"if-range",
                          b"transfer-encoding"})
FORWARDING_HEADERS = frozenset({b"x-forwarded-proto", b"forwarded"})


@dataclass(frozen=True, slots=True)
class Attempt:
    """What :meth:`HotPath.try_serve` did: answered (truthy), or not, with what it read
    from L2 for the request's primary key, if it read it."""

    served: bool
    looked_up: LookedUp | None = None

    def __bool__(self) -> bool:
        return self.served


SERVED = Attempt(True)
NOT_SERVED = Attempt(False)


class Wait:
    """:meth:`HotPath.reply_now`'s answer when L2 must be waited for: await
    :meth:`HotPath.reply_later` instead."""


WAIT: Final = Wait()


class HotPath:
    """Serves fresh single-variant L1 hits for one pipeline."""

    def __init__(self, pipeline: Pipeline) -> None:
        self._pipeline = pipeline
        self._keying = pipeline.keying
        self._memo: OrderedDict[MemoKey, str | None] = OrderedDict()
        self._memo_keys = pipeline.config.memory.memo_keys
        self._prefix = f"{pipeline.fetcher.config.cache_name}; hit; ttl=".encode()
        self._via = (b"via", pipeline.fetcher.config.via)
        self._now = 0.0
        """When the last reply was made (a hit's read time for refresh ahead: no second
        clock read per hit)."""

    @property
    def keying(self) -> str:
        """What keys computed now depend on (:attr:`~stoker.proxy.keying.Keying.token`)."""
        return self._keying.token

    @property
    def memoised(self) -> int:
        """Keys the memo holds now (at most ``config.memory.memo_keys``)."""
        return len(self._memo)

    async def try_serve(self, scope: Message, send: Send) -> Attempt:
        """Answer ``scope`` if it is a fresh single-variant hit (L1, else L2); else say
        what was read from L2 on the way, for the pipeline (which then reads no more)."""
        primary = self.key(scope)
        if primary is None:
            return NOT_SERVED
        entries = self._pipeline.store.get_l1(primary)
        looked_up = None
        if entries is None:  # an L2 hit is served here too (read once, promoted to L1)
            reply, looked_up = await self.reply_later(primary, scope["headers"])
        else:
            reply = self._reply(scope["headers"], entries)
        if reply is None:
            return Attempt(False, looked_up) if looked_up is not None else NOT_SERVED
        self.count(reply, scope["headers"], peer_of(scope))
        await send_reply(send, reply, head=False, http1=scope["http_version"].startswith("1"))
        return SERVED

    def reply_now(self, primary: str, headers: list[tuple[bytes, bytes]]) -> Reply | Wait | None:
        """The reply to a request whose :meth:`key` is ``primary`` and whose headers are
        ``headers``, if it is a fresh single-variant hit in L1, or in L2 where L2 reads
        without waiting; :data:`WAIT` where L2 must be waited for; else ``None``
        (everything else takes the pipeline).  :meth:`count` a reply once it is sent.
        Synchronous, for the front's protocol callbacks."""
        entries = self._pipeline.store.read_now(primary)  # an L2 hit read here is promoted
        return WAIT if entries is None else self._reply(headers, entries)

    async def reply_later(self, primary: str, headers: list[tuple[bytes, bytes]]
                          ) -> tuple[Reply | None, LookedUp]:
        """:meth:`reply_now`, waiting for L2 (the entries read are promoted as by
        ``get``), with what was read, for the pipeline when there is no reply."""
        entries = await self._pipeline.store.get(primary)
        return self._reply(headers, entries), (primary, entries)

    def _reply(self, headers: list[tuple[bytes, bytes]],
               entries: list[CacheEntry]) -> Reply | None:
        """:func:`~stoker.proxy.hit.hit_reply` for a request with ``headers``, now."""
        now = self._now = self._pipeline.clock.now()
        return hit_reply(entries, lower_joined(headers, b"accept-encoding"), now,
                         self._prefix, self._via)

    def key(self, scope: Message) -> str | None:
        """The primary key of a plain ``GET`` the fast path may answer, else ``None``."""
        if scope["method"] != "GET":
            return None
        target = scope.get("raw_path") or scope["path"].encode("latin-1")
        query = scope.get("query_string")
        if query:
            target += b"?" + query
        return self.key_of(scope["http_version"], target, scope["headers"],
                           scope.get("scheme") or "http", lambda: head_of(scope))

    def key_of(self, http_version: str, target: bytes, headers: list[tuple[bytes, bytes]],
               scheme: str, head: Callable[[], RequestHead]) -> str | None:
        """The primary key of a ``GET`` of ``target`` (origin-form, query included) with
        ``headers``, on a connection of ``scheme``, if the fast path may answer it, else
        ``None``.  ``head`` gives the request's head; it is called only when the request
        carries forwarding headers or its target is not memoised yet."""
        if http_version not in HTTP_VERSIONS or not target.startswith(b"/"):
            return None  # the pipeline refuses it, or it is absolute-form
        host = b""
        forwarded = False
        size = 0
        for name, value in headers:
            size += len(name) + len(value)
            if name in SLOW_HEADERS:
                return None
            if name == b"host":
                if host:
                    return None  # a second Host: the pipeline refuses it
                host = value
            elif name in FORWARDING_HEADERS:
                forwarded = True
        if size > MAX_HEADER_BYTES or len(headers) > MAX_HEADERS or not host:
            return None  # the pipeline refuses it (or, for HTTP/1.0, gives the default host)
        if forwarded:
            scheme = visitor_scheme(scheme, head().peer, headers, self._pipeline.config.trusted)
        return self._primary_key(scheme, host, target, head)

    def count(self, reply: Reply, headers: list[tuple[bytes, bytes]], peer: str | None) -> None:
        """Count ``reply``, sent to ``peer`` for a request with ``headers``, as a visitor's
        hit (:meth:`Pipeline.count`; Vary-less: no header selected it), and show it to the
        live request log's watchers, if any (unwatched: one attribute read)."""
        assert reply.entry is not None
        pipeline = self._pipeline
        pipeline.count(FAST_HIT, "hit", reply.entry, reply.entry.url, False, (), self._now)
        if pipeline.tap.watched:
            config = pipeline.config
            pipeline.tap.publish(fast_hit(reply, visitor_address(peer, headers, config.trusted),
                                          at=self._now, redact=config.log_redact_query))

    def _primary_key(self, scheme: str, host: bytes, target: bytes,
                     head: Callable[[], RequestHead]) -> str | None:
        pipeline = self._pipeline
        memo_key = (self._keying.token, scheme, host, target)
        try:
            return self._memo[memo_key]
        except KeyError:
            pass
        try:
            request = parse_request(head(), pipeline.config.default_host,
                                    pipeline.config.trusted)
        except BadRequest:
            return None
        rule = match_rule(pipeline.config.rules, request.host, request.path,
                          request.query)
        primary = None if rule is not None and rule.bypass else self._keying.key_for(request, rule)
        if len(self._memo) >= self._memo_keys:
            self._memo.popitem(last=False)
        self._memo[memo_key] = primary
        return primary


"""The reply a sink gives and the one ASGI renderer of replies."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from stoker.adapters.asgi_reply import send_reply
from stoker.asgi import Message
from stoker.cache.outcome import GENERATED, Kind, Outcome
from stoker.origin.port import OriginError
from stoker.proxy.reply import Reply, ReplySink

VIA = (b"via", b"1.1 t")


def sink() -> ReplySink:
    return ReplySink(via=VIA, name="t")


class Pieces:
    """A body stream of ``pieces``, then ``error`` if given; it records being closed."""

    def __init__(self, *pieces: bytes, error: BaseException | None = None) -> None:
        self._pieces = list(pieces)
        self._error = error
        self.closed = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        if self._pieces:
            return self._pieces.pop(0)
        if self._error is not None:
            raise self._error
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self.closed = True


class Recorder:
    def __init__(self, *, fail_at: int | None = None) -> None:
        self.messages: list[Message] = []
        self._fail_at = fail_at

    async def __call__(self, message: Message) -> None:
        if self._fail_at is not None and len(self.messages) == self._fail_at:
            raise OSError("the client went away")
        self.messages.append(message)

    def bodies(self) -> list[tuple[bytes, bool]]:
        return [(m["body"], m["more_body"]) for m in self.messages[1:]]


async def test_a_reply_carries_its_fields_then_the_extra_ones_then_via() -> None:
    given = sink()
    stamp = given.stamp(Outcome(Kind.HIT, ttl=5))
    given.whole(200, [(b"content-length", b"1")], b"x", extra=[(b"age", b"3"), stamp])
    reply = await given.reply
    assert reply.fields() == [(b"content-length", b"1"), (b"age", b"3"),
                              (b"cache-status", b"t; hit; ttl=5"), VIA]
    assert reply.outcome == Outcome(Kind.HIT, ttl=5)


async def test_a_reply_without_a_stamp_is_generated() -> None:
    given = sink()
    given.whole(405, [], b"")
    reply = await given.reply
    assert reply.outcome is GENERATED
    assert (b"cache-status", GENERATED.cache_status("t")) in reply.extra


async def test_an_outcome_corrected_after_the_head_reaches_the_reply() -> None:
    given = sink()
    given.stamp(Outcome(Kind.MISS, fwd="uri-miss", fwd_status=200, stored=True))
    given.stream(200, [], Pieces(b"a"))
    reply = await given.reply
    assert given.outcome is not None
    given.outcome = given.outcome.not_stored("incomplete")
    assert reply.outcome.kind is Kind.PASS and not reply.outcome.stored


async def test_a_sink_that_fails_before_its_reply_raises_to_whoever_awaits_it() -> None:
    given = sink()
    given.fail(RuntimeError("boom"))
    with pytest.raises(RuntimeError, match="boom"):
        await given.reply
    given.fail(RuntimeError("again"))  # a second failure changes nothing


def reply_of(body: bytes | Pieces, *, close: bool = False) -> Reply:
    return Reply(200, [(b"x", b"1")], body, GENERATED, extra=[VIA], close=close)


async def test_a_whole_body_is_two_messages() -> None:
    send = Recorder()
    await send_reply(send, reply_of(b"abc"), head=False, http1=True)
    assert send.messages[0] == {"type": "http.response.start", "status": 200,
                                "headers": [(b"x", b"1"), VIA]}
    assert send.bodies() == [(b"abc", False)]


async def test_a_stream_is_sent_piece_by_piece_then_ended_and_closed() -> None:
    send, body = Recorder(), Pieces(b"a", b"b")
    await send_reply(send, reply_of(body), head=False, http1=True)
    assert send.bodies() == [(b"a", True), (b"b", True), (b"", False)]
    assert body.closed


@pytest.mark.parametrize("body", [b"abc", Pieces(b"a", b"b")])
async def test_a_head_is_sent_without_its_body(body: bytes | Pieces) -> None:
    send = Recorder()
    await send_reply(send, reply_of(body), head=True, http1=True)
    assert send.bodies() == [(b"", False)]
    if isinstance(body, Pieces):
        assert body.closed and body._pieces == [b"a", b"b"]  # closed unread


async def test_a_stream_that_breaks_off_is_never_ended() -> None:
    send, body = Recorder(), Pieces(b"a", error=OriginError("broke off"))
    await send_reply(send, reply_of(body), head=False, http1=True)
    assert send.bodies() == [(b"a", True)]
    assert body.closed


async def test_a_client_gone_ends_the_sending_quietly_and_closes_the_stream() -> None:
    send, body = Recorder(fail_at=2), Pieces(b"a", b"b", b"c")
    await send_reply(send, reply_of(body), head=False, http1=True)
    assert send.bodies() == [(b"a", True)]
    assert body.closed


@pytest.mark.parametrize(("http1", "closes"), [(True, True), (False, False)])
async def test_a_refusal_closes_an_http1_connection(http1: bool, closes: bool) -> None:
    send = Recorder()
    await send_reply(send, reply_of(b"no", close=True), head=False, http1=http1)
    assert ((b"connection", b"close") in send.messages[0]["headers"]) is closes

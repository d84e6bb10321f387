"""The response buffer between an origin's reader and a slow client: order, bounds,
disk overflow, dropping, and the feed's end and failure semantics."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stoker.adapters.asgi_reply import send_reply
from stoker.asgi import Message
from stoker.origin.port import OriginError
from stoker.proxy.client_feed import MEMORY, ClientFeed, ResponseBuffer, WholeBody, feed_for
from stoker.proxy.reply import ReplySink


@settings(max_examples=80)
@given(pieces=st.lists(st.binary(min_size=1, max_size=300), max_size=40),
       reads=st.lists(st.integers(min_value=0, max_value=5), max_size=40),
       memory=st.integers(min_value=1, max_value=600),
       file_limit=st.integers(min_value=0, max_value=2000))
def test_the_reader_gets_every_byte_in_order(tmp_path_factory: pytest.TempPathFactory,
                                             pieces: list[bytes], reads: list[int],
                                             memory: int, file_limit: int) -> None:
    """Whatever the limits and however the writer and the reader interleave, the reader
    gets exactly the bytes written, in order, and the writer never waits forever."""
    directory = tmp_path_factory.mktemp("buffer")

    async def run() -> bytes:
        buffer = ResponseBuffer(directory, memory=memory, file_limit=file_limit)
        got: list[bytes] = []

        async def reader() -> None:
            for pause in reads:
                for _ in range(pause):
                    await asyncio.sleep(0)
                piece = await buffer.get()
                if piece is None:
                    return
                got.append(piece)
            while (piece := await buffer.get()) is not None:
                got.append(piece)

        reading = asyncio.create_task(reader())
        for piece in pieces:
            await asyncio.wait_for(buffer.put(piece), 5)
        buffer.end()
        await asyncio.wait_for(reading, 5)
        buffer.close()
        return b"".join(got)

    assert asyncio.run(run()) == b"".join(pieces)


async def test_a_full_buffer_makes_the_writer_wait_for_the_reader(tmp_path: Path) -> None:
    buffer = ResponseBuffer(tmp_path, memory=10, file_limit=10)
    await buffer.put(b"a" * 10)  # memory
    await buffer.put(b"b" * 10)  # the file
    blocked = asyncio.create_task(buffer.put(b"c"))
    await asyncio.sleep(0.05)
    assert not blocked.done()
    assert await buffer.get() == b"a" * 10
    assert await buffer.get() == b"b" * 10
    await asyncio.wait_for(blocked, 1)  # caught up: the file starts over
    buffer.end()
    assert await buffer.get() == b"c"
    assert await buffer.get() is None
    buffer.close()


async def test_a_dropped_buffer_takes_everything_without_waiting(tmp_path: Path) -> None:
    buffer = ResponseBuffer(tmp_path, memory=1, file_limit=0)
    await buffer.put(b"x")
    buffer.drop()
    for _ in range(100):
        await asyncio.wait_for(buffer.put(b"more"), 1)


async def test_an_error_reaches_the_reader_after_the_last_piece(tmp_path: Path) -> None:
    buffer = ResponseBuffer(tmp_path)
    await buffer.put(b"first")
    buffer.end(OriginError("broke off"))
    assert await buffer.get() == b"first"
    with pytest.raises(OriginError):
        await buffer.get()


class Recorder:
    """An ASGI send that records messages, waiting on ``gate`` before each body piece."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.body":
            await self.gate.wait()
        self.messages.append(message)


def sink_for() -> ReplySink:
    return ReplySink(via=(b"via", b"1.1 t"), name="t")


def fed(sink: ReplySink, directory: Path, *, hold_last: bool = False) -> ClientFeed:
    """A feed given to ``sink`` as its reply's body, as the core's deliver step does."""
    feed = ClientFeed(directory, hold_last=hold_last)
    sink.stream(200, [], feed)
    return feed


async def sending(sink: ReplySink, send: Recorder) -> asyncio.Task[None]:
    """The sending of ``sink``'s reply to ``send``, as an ASGI server would, in a task."""
    reply = await sink.reply
    return asyncio.create_task(send_reply(send, reply, head=False, http1=True))


def body_messages(send: Recorder) -> list[tuple[bytes, bool]]:
    return [(m["body"], m["more_body"]) for m in send.messages
            if m["type"] == "http.response.body"]


async def test_holding_the_last_piece_sends_it_only_after_end(tmp_path: Path) -> None:
    send = Recorder()
    sink = sink_for()
    feed = fed(sink, tmp_path, hold_last=True)
    sender = await sending(sink, send)
    await feed.put(b"one")
    await feed.put(b"two")
    await asyncio.sleep(0.05)
    assert body_messages(send) == [(b"one", True)]  # "two" waits for the end
    feed.end()
    await feed.finished()
    await sender
    assert body_messages(send) == [(b"one", True), (b"two", True), (b"", False)]


async def test_a_slow_client_never_slows_the_writer(tmp_path: Path) -> None:
    send = Recorder()
    send.gate.clear()  # the client reads nothing
    sink = sink_for()
    feed = fed(sink, tmp_path)
    sender = await sending(sink, send)
    for _ in range(100):
        await asyncio.wait_for(feed.put(b"x" * 65536), 1)  # 6.25 MiB, into the file
    feed.end()
    send.gate.set()
    await feed.finished()
    await sender
    assert b"".join(body for body, _ in body_messages(send)) == b"x" * 65536 * 100


async def test_a_failed_feed_never_ends_the_response(tmp_path: Path) -> None:
    send = Recorder()
    sink = sink_for()
    feed = fed(sink, tmp_path)
    sender = await sending(sink, send)
    await feed.put(b"part")
    feed.fail(OriginError("broke off"))
    with pytest.raises(OriginError):
        await feed.finished()
    await sender
    assert body_messages(send) == [(b"part", True)]  # never ended


async def test_a_cancelled_feed_never_ends_the_response(tmp_path: Path) -> None:
    """Even after its end was put: what was held is dropped, so it must not look whole."""
    send = Recorder()
    send.gate.clear()
    sink = sink_for()
    feed = fed(sink, tmp_path)
    sender = await sending(sink, send)
    await feed.put(b"part")
    feed.end()
    feed.cancel()
    send.gate.set()
    await sender
    assert all(more for _, more in body_messages(send))


async def test_a_client_gone_drops_the_rest_without_waiting(tmp_path: Path) -> None:
    sink = sink_for()
    feed = fed(sink, tmp_path)
    reply = await sink.reply
    assert not isinstance(reply.body, bytes)
    await reply.body.aclose()
    assert feed.gone
    for _ in range(100):
        await asyncio.wait_for(feed.put(b"x" * 65536), 1)
    feed.end()
    await asyncio.wait_for(feed.finished(), 1)


async def test_a_body_declared_to_fit_in_memory_is_kept_whole(tmp_path: Path) -> None:
    feeds = [feed_for(tmp_path, length=length)
             for length in (MEMORY, MEMORY + 1, None)]
    for feed in feeds:
        feed.cancel()
    assert [type(feed) for feed in feeds] == [WholeBody, ClientFeed, ClientFeed]


async def test_a_whole_body_is_given_whole_and_raises_after_a_failure() -> None:
    whole = WholeBody()
    await whole.put(b"a")
    await whole.put(b"b")
    whole.end()
    await whole.finished()
    assert whole.body == b"ab"
    failed = WholeBody()
    await failed.put(b"a")
    failed.fail(OriginError("broke off"))
    with pytest.raises(OriginError):  # nothing given: the core answers 502
        await failed.finished()

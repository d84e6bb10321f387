"""Reading a request body whole before forwarding: what arrives, what is refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.clocks import SteppedClock
from tests.conftest import until

from stoker.asgi import Message
from stoker.clock import FakeClock
from stoker.proxy.request_body import (
    MEMORY,
    BodyBrokenOff,
    BodyTimeout,
    BodyTooLarge,
    asgi_body,
    discard_body,
    read_body,
)


def receiving(pieces: Sequence[bytes], *, then: str = "end") -> AsyncIterator[bytes]:
    """The body an ASGI receive gives: ``pieces``, then the end (or a disconnect, or
    nothing)."""
    messages: list[Message] = [{"type": "http.request", "body": piece, "more_body": True}
                               for piece in pieces]
    if then == "end":
        messages.append({"type": "http.request", "body": b"", "more_body": False})
    elif then == "disconnect":
        messages.append({"type": "http.disconnect"})

    async def receive() -> Message:
        if messages:
            return messages.pop(0)
        await asyncio.Event().wait()  # a client that sends nothing more
        raise AssertionError("unreachable")

    return asgi_body(receive)


@settings(max_examples=50)
@given(st.lists(st.binary(max_size=40_000), max_size=6))
def test_the_body_read_is_the_body_sent(tmp_path_factory: pytest.TempPathFactory,
                                        pieces: list[bytes]) -> None:
    async def run() -> tuple[int, bytes]:
        body = await read_body(receiving(pieces), timeout=1, limit=10**9,
                               directory=tmp_path_factory.mktemp("bodies"),
                               clock=FakeClock(auto_advance=False))
        try:
            first = b"".join([piece async for piece in body.chunks()])
            again = b"".join([piece async for piece in body.chunks()])
            assert first == again  # each iteration starts over (a retry resends it)
            return body.size, first
        finally:
            body.close()

    assert asyncio.run(run()) == (sum(map(len, pieces)), b"".join(pieces))


async def test_a_long_body_waits_in_an_unnamed_file(tmp_path: Path) -> None:
    body = await read_body(receiving([b"x" * MEMORY, b"y"]), timeout=1,
                           limit=10**9, directory=tmp_path, clock=FakeClock(auto_advance=False))
    assert list(tmp_path.iterdir()) == []  # no name: nothing to sweep after a crash
    assert b"".join([piece async for piece in body.chunks()]) == b"x" * MEMORY + b"y"
    body.close()


@pytest.mark.parametrize(("pieces", "then", "refusal"), [
    ([b"abc"], "disconnect", BodyBrokenOff),
    ([b"abc"], "stall", BodyTimeout),
    ([b"a" * 600, b"b" * 600], "end", BodyTooLarge),
])
async def test_refusals(tmp_path: Path, pieces: list[bytes], then: str,
                        refusal: type[Exception]) -> None:
    """A stall is refused once ``timeout`` has passed: at once on an auto-advancing clock."""
    with pytest.raises(refusal):
        await read_body(receiving(pieces, then=then), timeout=TIMEOUT,
                        limit=1000, directory=tmp_path, clock=FakeClock())
    with pytest.raises(refusal):
        await discard_body(receiving(pieces, then=then), timeout=TIMEOUT,
                           limit=1000, clock=FakeClock())


TIMEOUT = 30.0
"""``client_body_timeout`` here (seconds on the test's clock)."""


@pytest.mark.parametrize("read", ["read", "discard"])
async def test_a_stall_is_refused_once_the_timeout_has_passed_and_not_before(
        tmp_path: Path, read: str) -> None:
    clock = SteppedClock()
    body = receiving([b"abc"], then="stall")
    reading = asyncio.ensure_future(
        read_body(body, timeout=TIMEOUT, limit=1000, directory=tmp_path, clock=clock)
        if read == "read" else discard_body(body, timeout=TIMEOUT, limit=1000, clock=clock))
    await until(lambda: clock.begun[TIMEOUT] == 2, "the wait after the first piece")
    clock.advance(TIMEOUT - 1)
    for _ in range(10):
        await asyncio.sleep(0)
    assert not reading.done()
    clock.advance(1)
    await until(reading.done, "the stalled read refused")
    with pytest.raises(BodyTimeout):
        reading.result()


async def test_the_timeout_bounds_each_pause_not_the_whole_body(tmp_path: Path) -> None:
    """Pieces each sent within ``timeout`` make a body read whole, however long it takes."""
    clock, sent = SteppedClock(), asyncio.Queue[Message]()

    async def receive() -> Message:
        return await sent.get()

    reading = asyncio.ensure_future(read_body(asgi_body(receive), timeout=TIMEOUT,
                                              limit=1000, directory=tmp_path, clock=clock))
    for n in range(1, 5):
        await until(lambda: clock.begun[TIMEOUT] == n, f"the wait for piece {n}")  # noqa: B023
        clock.advance(TIMEOUT - 1)  # 4 pauses: far longer than TIMEOUT in all
        await sent.put({"type": "http.request", "body": b"%d" % n, "more_body": n < 4})
    body = await reading
    assert b"".join([piece async for piece in body.chunks()]) == b"1234"
    body.close()

"""A TCP origin scripted at the byte level, for misbehaviour real origins show.

The test supplies ``answer(request, writer)``: it writes whatever bytes it
likes and returns whether to keep the connection open for another request.
With ``idle`` set, a connection idle for that long is closed by the origin
(as gunicorn and Node do with their short keep-alive timeouts) and
``idle_closed`` is set.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


@dataclass
class RawRequest:
    head: bytes
    body: bytes
    connection: int  # 1-based number of the connection it came on
    index: int  # 1-based number of the request on its connection

    @property
    def method(self) -> str:
        return self.head.split(b" ", 1)[0].decode()

    @property
    def path(self) -> str:
        return self.head.split(b" ", 2)[1].decode()


Answer = Callable[[RawRequest, asyncio.StreamWriter], Awaitable[bool]]


@dataclass
class RawOrigin:
    answer: Answer
    idle: float | None = None
    url: str = ""
    connections: int = 0
    requests: list[RawRequest] = field(default_factory=list)
    idle_closed: asyncio.Event = field(default_factory=asyncio.Event)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number, index = self.connections, 0
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.idle)
                except TimeoutError:
                    self.idle_closed.set()
                    return
                index += 1
                request = RawRequest(head, await _read_body(reader, head), number, index)
                self.requests.append(request)
                if not await self.answer(request, writer):
                    return
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()


async def _read_body(reader: asyncio.StreamReader, head: bytes) -> bytes:
    lines = head.lower().split(b"\r\n")
    if b"transfer-encoding: chunked" in lines:
        body = b""
        while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
            body += (await reader.readexactly(size + 2))[:-2]
        await reader.readuntil(b"\r\n")
        return body
    for line in lines:
        if line.startswith(b"content-length:"):
            return await reader.readexactly(int(line.split(b":", 1)[1]))
    return b""


@asynccontextmanager
async def raw_origin(answer: Answer, *, idle: float | None = None) -> AsyncIterator[RawOrigin]:
    """Run a :class:`RawOrigin` on a free port for the duration of the block."""
    origin = RawOrigin(answer, idle)
    server = await asyncio.start_server(origin.serve, "127.0.0.1", 0)
    origin.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield origin
    finally:
        server.close()
        await server.wait_closed()


def response(status: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    """An HTTP/1.1 response with a Content-Length."""
    fields = {**headers, "Content-Length": str(len(body))}
    lines = "".join(f"{name}: {value}\r\n" for name, value in fields.items())
    return f"HTTP/1.1 {status}\r\n{lines}\r\n".encode() + body


def chunked(status: str, headers: dict[str, str], chunks: list[bytes]) -> bytes:
    """An HTTP/1.1 response with a chunked body (no Content-Length)."""
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks)
    return (f"HTTP/1.1 {status}\r\n{lines}Transfer-Encoding: chunked\r\n\r\n".encode()
            + body + b"0\r\n\r\n")

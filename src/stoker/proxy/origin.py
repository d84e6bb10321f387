"""Talking to the origin: the ``OriginClient`` port and its HTTP implementation.

Invariants: bodies stream both ways (a response is read chunk by chunk as the
client or the cache consumes it, never buffered whole); redirects are never
followed and encodings never decoded (the proxy passes the origin's bytes
through); connect and per-read stalls longer than the timeout raise
:class:`OriginTimeout`; every other transport failure raises
:class:`OriginError`.  ``OriginResponse.close`` is idempotent and must be
called (the pipeline does so in ``finally``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import aiohttp
from yarl import URL

Headers = list[tuple[bytes, bytes]]
CHUNK = 64 * 1024


class OriginError(Exception):
    """The origin could not be reached or broke off the response."""


class OriginTimeout(OriginError):
    """The origin did not answer (or stalled) within the timeout."""


@dataclass(slots=True)
class OriginResponse:
    """An origin response whose headers have arrived and whose body has not been read."""

    status: int
    headers: Headers
    chunks: AsyncIterator[bytes]
    close: Callable[[], Awaitable[None]]


class OriginClient(Protocol):
    """Something that can answer a request: a remote origin or a wrapped ASGI app."""

    async def fetch(self, method: str, target: str, headers: Headers,
                    body: AsyncIterator[bytes] | None) -> OriginResponse:
        """Send the request; return once response headers are in."""

    async def close(self) -> None:
        """Release connections."""


class HttpOrigin:
    """An origin reached over HTTP with a pooled aiohttp session."""

    def __init__(self, base_url: str, *, timeout: float, pool_size: int = 256) -> None:
        self._base = base_url.rstrip("/")
        self._timeout = aiohttp.ClientTimeout(total=None, connect=timeout, sock_read=timeout)
        self._pool_size = pool_size
        self._session: aiohttp.ClientSession | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._pool_size, ttl_dns_cache=60),
                timeout=self._timeout,
                auto_decompress=False,
                skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent"),
                cookie_jar=aiohttp.DummyCookieJar(),
            )
        return self._session

    async def fetch(self, method: str, target: str, headers: Headers,
                    body: AsyncIterator[bytes] | None) -> OriginResponse:
        url = URL(self._base + target, encoded=True)
        request_headers = _str_headers(headers)
        try:
            response = await self._get_session().request(
                method, url, headers=request_headers, data=body, allow_redirects=False,
                compress=None, auto_decompress=False,
            )
        except TimeoutError as error:
            raise OriginTimeout(f"origin {self._base} did not answer in time") from error
        except (aiohttp.ClientError, OSError) as error:
            raise OriginError(f"origin {self._base} failed: {error}") from error
        return OriginResponse(
            status=response.status,
            headers=[(name.lower(), value) for name, value in response.raw_headers],
            chunks=_read_body(response, self._base),
            close=_closer(response),
        )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _str_headers(headers: Sequence[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in headers]


async def _read_body(response: aiohttp.ClientResponse, base: str) -> AsyncIterator[bytes]:
    try:
        async for chunk in response.content.iter_chunked(CHUNK):
            yield chunk
    except TimeoutError as error:
        raise OriginTimeout(f"origin {base} stalled while sending the body") from error
    except (aiohttp.ClientError, OSError) as error:
        raise OriginError(f"origin {base} broke off the body: {error}") from error


def _closer(response: aiohttp.ClientResponse) -> Callable[[], Awaitable[None]]:
    async def close() -> None:
        if not response.closed:
            if response.content.is_eof():
                response.release()
            else:
                response.close()  # unread body: drop the connection rather than drain it
        await asyncio.sleep(0)

    return close

"""A small synchronous client of the admin API, for CLI commands.

Invariant: every failure a user can cause (nothing listening, a wrong
token, a refused request, a non-JSON answer) raises :class:`AdminClientError`
with one sentence saying what happened and what to change; the token is
never part of a message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import httpx


class AdminClientError(Exception):
    """A failed admin call, phrased for the person at the terminal."""


class AdminClient:
    """Talks to one Stoker's admin API."""

    def __init__(self, base_url: str, token: str | None, *, timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *_: object) -> None:
        self._client.close()

    def purge(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /api/purge``."""
        return self._call("POST", "/api/purge", json=body)

    def entry(self, url: str, host: str | None = None) -> dict[str, Any]:
        """``GET /api/entry``."""
        params = {"url": url, **({"host": host} if host else {})}
        return self._call("GET", "/api/entry", params=params)

    def warm(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /api/warm``."""
        return self._call("POST", "/api/warm", json=body)

    def warm_run(self, run_id: int) -> dict[str, Any]:
        """``GET /api/warm/{id}``."""
        return self._call("GET", f"/api/warm/{run_id}")

    def why(self, url: str | None = None, host: str | None = None) -> dict[str, Any]:
        """``GET /api/why`` (for ``url``, when given)."""
        params = {"url": url, **({"host": host} if host else {})} if url else {}
        return self._call("GET", "/api/why", params=params)

    def status(self) -> dict[str, Any]:
        """``GET /api/status``: the process's figures."""
        return self._call("GET", "/api/status")

    def log(self, params: dict[str, str]) -> Iterator[tuple[str, Any]]:
        """``GET /api/log``: its events as ``(name, data)``, as they come, until the
        stream ends (never, but for a server that stops)."""
        try:
            with self._client.stream("GET", "/api/log", params=params,
                                     timeout=httpx.Timeout(10.0, read=None)) as response:
                if response.status_code != 200:
                    response.read()
                    self._check("GET", "/api/log", response)
                yield from sse_events(response.iter_lines())
        except httpx.TransportError as error:
            raise self._unreachable(error) from None

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.TransportError as error:
            raise self._unreachable(error) from None
        return self._check(method, path, response)

    def _unreachable(self, error: Exception) -> AdminClientError:
        return AdminClientError(
            f"cannot reach Stoker's admin API at {self.base_url} ({type(error).__name__}) — "
            "is `stoker serve` running? Point to it with --admin-url or STOKER_ADMIN_URL")

    def _check(self, method: str, path: str, response: httpx.Response) -> dict[str, Any]:
        """``response``'s JSON object; :class:`AdminClientError` for a refusal."""
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code == 401:
            raise AdminClientError(
                f"the admin API at {self.base_url} refused the token: pass the server's "
                "admin_token with --admin-token or STOKER_ADMIN_TOKEN")
        if response.status_code >= 400 or not isinstance(data, dict):
            detail = data.get("error") if isinstance(data, dict) else response.text[:200]
            raise AdminClientError(f"{method} {path} failed with HTTP {response.status_code}: "
                                   f"{detail}")
        return data


def sse_events(lines: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """The ``(event, data)`` of a Server-Sent Events stream's ``lines``, ``data`` read as
    JSON (comments and fields other than ``event`` and ``data`` skipped).  Pure."""
    event, data = "message", list[str]()
    for line in lines:
        if not line:
            if data:
                yield event, json.loads("\n".join(data))
            event, data = "message", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))

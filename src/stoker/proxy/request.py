"""What the proxy needs to know about one client request, read from an ASGI scope.

Pure.  Invariant: a :class:`RequestInfo` is only built for a request whose
target and Host are well-formed; anything else raises :class:`BadRequest`,
which the pipeline answers with 400 (a malformed request never crashes it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stoker.http.headers import get_header
from stoker.http.keys import url_from_parts

_HOST = re.compile(r"^(?:[A-Za-z0-9.\-_~]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$")
_FORBIDDEN_PATH = re.compile(r"[\x00-\x20\x7f]")


class BadRequest(ValueError):
    """The request cannot be proxied; the message is safe to show to the client."""


@dataclass(slots=True)
class RequestInfo:
    """A parsed client request.  ``headers`` are the ASGI raw headers (lower-case names)."""

    method: str
    scheme: str
    host: str
    path: str
    query: str
    headers: list[tuple[bytes, bytes]]
    client: str | None

    @property
    def target(self) -> str:
        """Origin-form request target: path plus query."""
        return f"{self.path}?{self.query}" if self.query else self.path

    @property
    def url(self) -> str:
        """Absolute URL of the resource, as keys and purges see it."""
        return url_from_parts(self.scheme, self.host, self.path, self.query)


def parse_request(scope: Mapping[str, Any], default_host: str) -> RequestInfo:
    """Build a :class:`RequestInfo` from an ASGI HTTP scope or raise :class:`BadRequest`."""
    headers: list[tuple[bytes, bytes]] = list(scope.get("headers") or ())
    raw_path = scope.get("raw_path")
    path = raw_path.decode("latin-1") if raw_path else str(scope.get("path") or "")
    if "?" in path:  # some servers leave the query in raw_path
        path = path.split("?", 1)[0]
    if not path.startswith("/") or _FORBIDDEN_PATH.search(path):
        raise BadRequest("the request target must be an absolute path")
    host_header = get_header(headers, b"host")
    host = host_header.decode("latin-1").strip() if host_header else default_host
    if not _HOST.match(host):
        raise BadRequest("the Host header is malformed")
    client = scope.get("client")
    return RequestInfo(
        method=str(scope.get("method", "GET")).upper(),
        scheme=str(scope.get("scheme") or "http"),
        host=host.lower(),
        path=path,
        query=(scope.get("query_string") or b"").decode("latin-1"),
        headers=headers,
        client=str(client[0]) if client else None,
    )

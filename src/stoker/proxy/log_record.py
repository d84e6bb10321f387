"""One line of the live request log (``stoker log``, ``GET /api/log``), as a value.

Invariants:
- A :class:`LogRecord` holds what the access log may write and nothing more: the time,
  the client address (resolved through ``trusted_proxies``), the method, the host, the
  path and query with the values of ``log_redact_query`` parameters replaced by
  ``REDACTED`` (:func:`redact_query`, the access log's too), the status, the
  :class:`~stoker.cache.outcome.Kind` and its reason, the duration and the body bytes.
  Never a cookie, an ``Authorization`` value or another header.
- Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from stoker.cache.outcome import Outcome
from stoker.proxy.reply import Reply
from stoker.proxy.request import RequestHead, RequestInfo

REDACTED: Final = "REDACTED"


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One request Stoker answered (see the module's invariants)."""

    at: float
    """When it was answered (seconds since the epoch)."""
    client: str
    method: str
    host: str
    target: str
    """The path, then ``?`` and the redacted query, if any."""
    status: int
    outcome: str
    """The :class:`~stoker.cache.outcome.Kind`'s value: ``hit``, ``miss``, ``pass``..."""
    reason: str
    """:attr:`~stoker.cache.outcome.Outcome.reason` (why a bypass or pass), else ``""``."""
    duration: float | None
    """Seconds from the request's start to its end (``None``: not timed)."""
    size: int | None
    """Body bytes (``None``: not known before they were sent)."""

    def as_json(self) -> dict[str, Any]:
        """The record as one JSON object's members (times in ms)."""
        return {"time": self.at, "client": self.client, "method": self.method,
                "host": self.host, "path": self.target, "status": self.status,
                "outcome": self.outcome, "reason": self.reason,
                "duration_ms": None if self.duration is None else round(
                    self.duration * 1000, 3),
                "bytes": self.size}


def redact_query(query: str, names: Sequence[str]) -> str:
    """``query`` with the values of parameters in ``names`` replaced by ``REDACTED``."""
    if not query or not names:
        return query
    wanted = {name.lower() for name in names}
    members = []
    for member in query.split("&"):
        name, sep, _ = member.partition("=")
        members.append(f"{name}={REDACTED}" if sep and name.lower() in wanted else member)
    return "&".join(members)


def shown_target(path: str, query: str, redact: Sequence[str]) -> str:
    """``path``, then ``?`` and ``query`` redacted, when there is a query."""
    query = redact_query(query, redact)
    return f"{path}?{query}" if query else path


def url_parts(url: str) -> tuple[str, str, str]:
    """An absolute URL's host, path and query (an entry's URL: ``scheme://host/path?q``)."""
    _, _, rest = url.partition("://")
    authority, slash, tail = rest.partition("/")
    path, _, query = (slash + tail).partition("?")
    return authority, path or "/", query


def reply_size(reply: Reply | None) -> int | None:
    """The body bytes of ``reply``: a whole body's length, else its ``Content-Length``,
    else its entry's body size; ``None`` when none says."""
    if reply is None:
        return None
    if isinstance(reply.body, bytes):
        return len(reply.body)
    for name, value in reply.headers:
        if name.lower() == b"content-length" and value.isdigit():
            return int(value)
    return reply.entry.body_size if reply.entry is not None else None


def served(request: RequestInfo, outcome: Outcome, reply: Reply | None, *, at: float,
           duration: float | None, redact: Sequence[str]) -> LogRecord:
    """The record of ``request`` answered by the request core with ``reply`` (``None``:
    none was given, the server answers ``500``)."""
    return LogRecord(at=at, client=request.client or "-", method=request.method,
                     host=request.host, target=shown_target(request.path, request.query, redact),
                     status=reply.status if reply is not None else 500,
                     outcome=outcome.kind.value, reason=outcome.reason, duration=duration,
                     size=reply_size(reply))


def fast_hit(reply: Reply, client: str | None, *, at: float,
             redact: Sequence[str]) -> LogRecord:
    """The record of a fresh hit the fast path answered with ``reply`` (a ``GET`` of its
    entry's URL, answered at once: no duration)."""
    assert reply.entry is not None
    host, path, query = url_parts(reply.entry.url)
    return LogRecord(at=at, client=client or "-", method="GET", host=host,
                     target=shown_target(path, query, redact), status=reply.status,
                     outcome=reply.outcome.kind.value, reason="", duration=None,
                     size=reply_size(reply))


def from_json(data: dict[str, Any]) -> LogRecord:
    """The record :meth:`LogRecord.as_json` gave ``data`` for (``ValueError``,
    ``KeyError`` or ``TypeError`` for anything else)."""
    duration = data["duration_ms"]
    size = data["bytes"]
    return LogRecord(at=float(data["time"]), client=str(data["client"]),
                     method=str(data["method"]), host=str(data["host"]),
                     target=str(data["path"]), status=int(data["status"]),
                     outcome=str(data["outcome"]), reason=str(data["reason"]),
                     duration=None if duration is None else float(duration) / 1000,
                     size=None if size is None else int(size))


def refused(head: RequestHead, reply: Reply, client: str | None, *, at: float,
            redact: Sequence[str]) -> LogRecord:
    """The record of a request the core refused to read (``reply``: its refusal), as its
    head says it."""
    host = next((value.decode("latin-1") for name, value in head.headers if name == b"host"),
                "-")
    return LogRecord(at=at, client=client or "-", method=head.method, host=host,
                     target=shown_target(head.target, head.query, redact), status=reply.status,
                     outcome=reply.outcome.kind.value, reason=reply.outcome.detail or "",
                     duration=None, size=reply_size(reply))

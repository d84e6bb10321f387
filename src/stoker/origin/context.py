"""What travels with one client request to every origin request made for it.

Invariant: a :class:`RequestContext` belongs to one request (a visitor's, or one warm
visit) and is handed, as an argument, to each origin request made on its behalf —
its cache fetch, its pass-through, the background revalidation it starts — so what
those layers need to know or report (the warm allowance, the client's ASGI scope for a
wrapped app, the client whose share of the origin slots it uses, the time spent waiting
for the origin) never travels in a context variable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stoker.asgi import ASGIApp


@dataclass(slots=True)
class RequestContext:
    """The side of one request that origin clients read and write."""

    warm_allowance: int | None = None
    """For a warm visit: how many warm requests may reach the origin at once (``None``:
    a visitor's request, which takes a visitor's slot)."""
    scope: Mapping[str, Any] | None = None
    """The client's ASGI scope, when the request came through ASGI (a wrapped app, as an
    embedded Stoker's origin, is called with it); ``None`` for a request Stoker's own
    front read, which makes no scope."""
    app: ASGIApp | None = None
    """The wrapped app the request came through (:class:`~stoker.origin.asgi.AsgiOrigin`
    asks it, when one Stoker caches several apps); ``None``: the origin's own (a warm
    visit's, a request to the proxy)."""
    origin_headers: tuple[tuple[bytes, bytes], ...] = ()
    """Headers every origin request made for it carries besides its own: a warm visit's
    credentials (never a visitor's request)."""
    client: str | None = None
    """The visitor's address as ``trusted_proxies`` resolve it (set by
    :func:`~stoker.proxy.request.parse_request`; ``None`` for a warm visit): the
    origin limit shares its slots fairly among clients by it."""
    origin_waits: list[float] = field(default_factory=list)
    """Seconds each origin request made for it waited for its answer, in order."""
    refresh: bool = False
    """A refresh visit (refresh ahead): the stored entry is revalidated even while fresh."""

    @property
    def warm(self) -> bool:
        """A warm visit, not a visitor's request."""
        return self.warm_allowance is not None

    @property
    def origin_wait(self) -> float:
        """Seconds spent waiting for the origin in all."""
        return sum(self.origin_waits)


def warm_context(allowance: int, origin_headers: tuple[tuple[bytes, bytes], ...] = (), *,
                 refresh: bool = False) -> RequestContext:
    """The context of one warm visit, at most ``allowance`` (at least one) at once, its
    origin requests carrying ``origin_headers`` (``refresh``: a refresh visit)."""
    return RequestContext(warm_allowance=max(1, allowance), origin_headers=origin_headers,
                          refresh=refresh)

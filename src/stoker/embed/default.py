"""``stoker.cached``: the function cache on the default store (memory, then SQLite in
``./.stoker``, opened on first use), for code that has no :class:`~stoker.embed.stoker.Stoker`
of its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def cached(**options: Any) -> Callable[[Any], Any]:
    """``@stoker.cached(ttl="1m", tags=...)``: :func:`stoker.functions.cached` on the default
    store (:func:`stoker.functions.default_runtime`)."""
    from stoker.functions import cached as on_runtime
    from stoker.functions import default_runtime

    decorator: Callable[[Any], Any] = on_runtime(default_runtime, **options)
    return decorator

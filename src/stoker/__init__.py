"""Stoker keeps a website's page cache hot.

``stoker.CacheMiddleware`` wraps any ASGI app with the caching pipeline; the
``stoker`` command runs the reverse proxy (see ``stoker --help``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stoker.version import VERSION as __version__

__all__ = ["CacheMiddleware", "__version__"]

if TYPE_CHECKING:
    from stoker.app.middleware import CacheMiddleware


def __getattr__(name: str) -> Any:
    """Import the middleware lazily so ``import stoker`` stays cheap."""
    if name == "CacheMiddleware":
        from stoker.app.middleware import CacheMiddleware

        return CacheMiddleware
    raise AttributeError(f"module 'stoker' has no attribute {name!r}")

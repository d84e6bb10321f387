"""Stoker keeps a website's page cache hot.

In a Python app (``docs/python.md``)::

    from stoker import Rule, Stoker
    stoker = Stoker(data_dir=".stoker", rules=[Rule(path="/", ttl="5m")])
    app = stoker.asgi(app)

The ``stoker`` command runs the reverse proxy (see ``stoker --help``).  Every name here is
imported on first use, so ``import stoker`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from stoker.version import VERSION as __version__

EXPORTS: dict[str, str] = {
    "Stoker": "stoker.embed.stoker",
    "StokerMiddleware": "stoker.embed.middleware",
    "CacheMiddleware": "stoker.embed.middleware",
    "Rule": "stoker.embed.rules",
    "cached": "stoker.embed.default",
    "page": "stoker.embed.page",
    "PurgeResult": "stoker.purge.purger",
    "PurgeRequestError": "stoker.purge.scope",
    "SettingsError": "stoker.config.settings",
    "Settings": "stoker.config.settings",
    "WarmRun": "stoker.warm.run",
}
"""Each public name and the module it lives in."""
_RENAMED = {"WarmRun": "Run"}

__all__ = ["CacheMiddleware", "PurgeRequestError", "PurgeResult", "Rule", "Settings",
           "SettingsError", "Stoker", "StokerMiddleware", "WarmRun", "__version__", "cached",
           "page"]

if TYPE_CHECKING:
    from stoker.config.settings import Settings, SettingsError
    from stoker.embed.default import cached
    from stoker.embed.middleware import CacheMiddleware, StokerMiddleware
    from stoker.embed.page import page
    from stoker.embed.rules import Rule
    from stoker.embed.stoker import Stoker
    from stoker.purge.purger import PurgeResult
    from stoker.purge.scope import PurgeRequestError
    from stoker.warm.run import Run as WarmRun


def __getattr__(name: str) -> Any:
    """Import a public name on first use (see the module docstring)."""
    module = EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'stoker' has no attribute {name!r}")
    return getattr(importlib.import_module(module), _RENAMED.get(name, name))

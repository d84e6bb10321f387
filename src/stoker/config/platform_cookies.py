"""Which platform a cookie belongs to, and whether it is personal: the presets' cookie
lists read as one table.  Pure.

Invariants:
- :data:`PERSONAL_COOKIES` holds every preset's personal cookie patterns, each with the
  preset that lists it: a preset's ``bypass_cookies``, where it puts every cookie its
  platform uses to tell one visitor from another (a login, a commenter, a cart, a chosen
  language, and the session cookies every preset shares).  :func:`is_personal` is true
  exactly for the names one of them matches.
- :func:`platform_cookie` names the preset whose own lists (not those every preset
  shares: sessions, analytics, consent) hold a cookie name.  A personal pattern of any
  preset comes before any preset's other lists, then presets in
  :data:`~stoker.config.presets.NAMES` order: a name personal to one platform is never
  reported as another's harmless one.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Final

from stoker.config.presets import (
    ANALYTICS_COOKIES,
    CONSENT_COOKIES,
    COOKIE_KEYS,
    PRESETS,
    SESSION_COOKIES,
)

PERSONAL_KEY: Final = "bypass_cookies"
"""The preset list that holds a platform's personal cookies."""


@dataclass(frozen=True, slots=True)
class PlatformCookie:
    """One pattern of one preset's own cookie lists."""

    preset: str
    """The preset's name, as ``preset = "…"`` takes it."""
    title: str
    """The platform's name."""
    pattern: str
    key: str
    """The preset's list that holds the pattern (``bypass_cookies``, ``ignore_cookies``, …)."""

    @property
    def personal(self) -> bool:
        """True when the platform tells one visitor from another by it."""
        return self.key == PERSONAL_KEY

    @property
    def config(self) -> str:
        """The ``stoker.toml`` line that applies the preset."""
        return f'preset = "{self.preset}"\n'


PERSONAL_COOKIES: Final[tuple[tuple[str, str], ...]] = tuple(
    (pattern, name) for name, preset in PRESETS.items() for pattern in preset.bypass_cookies)
"""Every preset's personal cookie patterns: ``(glob, preset name)``."""

_SHARED: Final = frozenset((*SESSION_COOKIES, *ANALYTICS_COOKIES, *CONSENT_COOKIES))


def _own(keys: tuple[str, ...]) -> tuple[PlatformCookie, ...]:
    return tuple(PlatformCookie(name, preset.title, pattern, key)
                 for name, preset in PRESETS.items() for key in keys
                 for pattern in preset.lists()[key] if pattern not in _SHARED)


_TABLE: Final = (*_own((PERSONAL_KEY,)),
                 *_own(tuple(key for key in COOKIE_KEYS if key != PERSONAL_KEY)))


def is_personal(name: str) -> bool:
    """True when cookie ``name`` matches a personal pattern of any preset."""
    return any(fnmatchcase(name, pattern) for pattern, _ in PERSONAL_COOKIES)


def platform_cookie(name: str) -> PlatformCookie | None:
    """The platform whose own lists hold cookie ``name`` (see the module invariants)."""
    return next((found for found in _TABLE if fnmatchcase(name, found.pattern)), None)

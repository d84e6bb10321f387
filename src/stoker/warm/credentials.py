"""Warm credentials: headers and cookies the warmer sends the origin, set at run time.

A site can need the warmer to carry something a visitor's browser does not: a header that
lets it past a maintenance page, a cookie an age gate sets.  The names allowed are the
``warm_credentials`` setting (``header:NAME`` / ``cookie:NAME``); their values are set
through the admin API, kept by a :class:`CredentialStore` (the warm database, so a
restart, and every node on ``database_url``, keeps them) and read through a
:class:`CredentialBook`.

Invariants:
- A value is write-only: nothing here returns it except :meth:`CredentialStore.values`,
  which only the book reads, to build the origin's headers.  What is shown or audited of a
  value is its :func:`fingerprint` (the first 16 hex digits of its SHA-256).
- :func:`check_value` refuses a value that could change the request's framing (CR, LF,
  NUL or another control character), a cookie value that would start another cookie
  (``;``), and anything over :data:`MAX_VALUE` bytes.
- :func:`origin_headers` is pure: one header per header credential, and one ``cookie``
  header holding every cookie credential in name order.  Only credentials whose name is
  still allowed are sent (a name taken out of the setting stops being sent at once).
- :meth:`CredentialBook.headers` reads the store at most once per :data:`REFRESH`
  seconds (another node's change is seen within that); a change made through this
  process's book is seen at once.  A store that fails keeps the last values read.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from stoker.clock import Clock

log = logging.getLogger("stoker.warm")

MAX_VALUE: Final = 4096
"""Longest value (bytes, UTF-8)."""
REFRESH: Final = 5.0
"""Seconds a book trusts what it read from the store."""

Header = tuple[bytes, bytes]


@dataclass(frozen=True, slots=True)
class CredentialInfo:
    """What may be shown of one stored credential."""

    name: str
    fingerprint: str
    set_at: float


class CredentialStore(Protocol):
    """Where credential values are kept (one row per name)."""

    async def put(self, name: str, value: str, now: float) -> None:
        """Set ``name`` to ``value`` (replacing any value it had)."""

    async def delete(self, name: str) -> bool:
        """Forget ``name``; whether it was set."""

    async def listed(self) -> Sequence[CredentialInfo]:
        """Every stored credential, by name, without its value."""

    async def values(self) -> Mapping[str, str]:
        """Every stored name and its value (for the origin's headers only)."""


def fingerprint(value: str) -> str:
    """What is shown and audited of ``value``: ``sha256:`` and 16 hex digits."""
    return "sha256:" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]


def check_value(name: str, value: object) -> str:
    """``value`` if ``name`` may carry it, else :class:`ValueError` saying why."""
    if not isinstance(value, str) or not value:
        raise ValueError("value: expected a non-empty string")
    if len(value.encode("utf-8")) > MAX_VALUE:
        raise ValueError(f"value: longer than {MAX_VALUE} bytes")
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in value):
        raise ValueError("value: control characters (CR, LF, NUL, ...) are not allowed")
    if not value.isascii() and name.startswith("header:"):
        raise ValueError("value: a header value must be ASCII")
    if name.startswith("cookie:") and (";" in value or not value.isascii()):
        raise ValueError("value: a cookie value must be ASCII without ';'")
    return value


def origin_headers(values: Mapping[str, str], allowed: Iterable[str]) -> tuple[Header, ...]:
    """The headers that carry ``values`` to the origin, for the ``allowed`` names only."""
    permitted = set(allowed)
    headers: list[Header] = []
    cookies: list[str] = []
    for name in sorted(values):
        if name not in permitted:
            continue
        kind, _, bare = name.partition(":")
        if kind == "header":
            headers.append((bare.encode("latin-1"), values[name].encode("latin-1")))
        else:
            cookies.append(f"{bare}={values[name]}")
    if cookies:
        headers.append((b"cookie", "; ".join(cookies).encode("latin-1")))
    return tuple(headers)


def with_origin_headers(headers: Sequence[Header], extra: Sequence[Header]) -> list[Header]:
    """``headers`` with ``extra`` in: an extra header replaces the same-named ones, and an
    extra ``cookie`` joins the request's own cookies.  Pure."""
    if not extra:
        return list(headers)
    replaced = {name for name, _ in extra if name != b"cookie"}
    merged = [(name, value) for name, value in headers if name not in replaced]
    for name, value in extra:
        own = next((i for i, (have, _) in enumerate(merged) if have == b"cookie"), None)
        if name == b"cookie" and own is not None:
            merged[own] = (b"cookie", merged[own][1] + b"; " + value)
        else:
            merged.append((name, value))
    return merged


class CredentialBook:
    """The credentials the warmer sends now, over a :class:`CredentialStore`."""

    def __init__(self, store: CredentialStore, allowed: Sequence[str], clock: Clock) -> None:
        self.store = store
        self.allowed = tuple(allowed)
        self._clock = clock
        self._headers: tuple[Header, ...] = ()
        self._read_at = float("-inf")

    async def headers(self) -> tuple[Header, ...]:
        """The headers of every allowed credential set (see the module invariants)."""
        if not self.allowed:
            return ()
        if self._clock.monotonic() - self._read_at >= REFRESH:
            try:
                self._headers = origin_headers(await self.store.values(), self.allowed)
            except Exception as error:
                log.warning("reading the warm credentials failed (%s: %s); the last read "
                            "are sent", type(error).__name__, error)
            self._read_at = self._clock.monotonic()
        return self._headers

    async def put(self, name: str, value: str) -> str:
        """Set an allowed ``name`` (:class:`KeyError` otherwise); its fingerprint."""
        self._require(name)
        await self.store.put(name, check_value(name, value), self._clock.now())
        self._read_at = float("-inf")
        return fingerprint(value)

    async def delete(self, name: str) -> bool:
        """Forget an allowed ``name`` (:class:`KeyError` otherwise); whether it was set."""
        self._require(name)
        found = await self.store.delete(name)
        self._read_at = float("-inf")
        return found

    def _require(self, name: str) -> None:
        if name not in self.allowed:
            raise KeyError(name)

"""Which lines of the live request log a watcher wants: parsed from its query (or the
``stoker log`` flags), matched against each :class:`~stoker.proxy.log_record.LogRecord`.

Filters (each optional; all given must match):
- ``outcome``: comma-separated :class:`~stoker.cache.outcome.Kind` values (``hit``,
  ``miss``, ``pass``, ``bypass``, ``error``, ``collapsed``, ``revalidated``,
  ``stale-while-revalidate``, ``stale-if-error``), ``stale`` standing for both stale kinds;
- ``status``: comma-separated codes (``502``) or classes (``5xx``);
- ``path``: a prefix of the path (``/blog``);
- ``client``: an address or a network (``10.0.0.0/8``);
- ``host``: the Host, case-insensitively.

Invariants: pure; a value that does not parse raises :class:`FilterError` naming its
field; :func:`matches` of the empty filter is true for every record.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from stoker.cache.outcome import Kind
from stoker.proxy.log_record import LogRecord

FIELDS: Final = ("outcome", "status", "path", "client", "host")
ALIASES: Final = {"stale": frozenset({Kind.STALE_SWR.value, Kind.STALE_ERROR.value})}
OUTCOMES: Final = frozenset(kind.value for kind in Kind)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class FilterError(ValueError):
    """A filter value that does not parse; :attr:`field` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True, slots=True)
class LogFilter:
    """What a watcher wants (empty members: anything)."""

    outcomes: frozenset[str] = frozenset()
    statuses: tuple[tuple[int, int], ...] = ()
    """Inclusive ranges: ``502`` is ``(502, 502)``, ``5xx`` ``(500, 599)``."""
    path: str = ""
    client: Network | None = None
    host: str = ""


EVERYTHING: Final = LogFilter()


def parse_filter(params: Mapping[str, str]) -> LogFilter:
    """The filter ``params`` (a query's or the flags') ask for; :class:`FilterError`."""
    path = params.get("path") or ""
    if path and not path.startswith("/"):
        raise FilterError("path", f"expected a path starting with /, got {path!r}")
    return LogFilter(outcomes=_outcomes(params.get("outcome") or ""),
                     statuses=_statuses(params.get("status") or ""), path=path,
                     client=_client(params.get("client") or ""),
                     host=(params.get("host") or "").lower())


def matches(wanted: LogFilter, record: LogRecord) -> bool:
    """Whether ``record`` is a line ``wanted`` asks for."""
    if wanted.outcomes and record.outcome not in wanted.outcomes:
        return False
    if wanted.statuses and not any(low <= record.status <= high
                                   for low, high in wanted.statuses):
        return False
    if wanted.path and not record.target.startswith(wanted.path):
        return False
    if wanted.host and record.host.lower() != wanted.host:
        return False
    return wanted.client is None or _within(record.client, wanted.client)


def describe(wanted: LogFilter) -> str:
    """``wanted`` in words, as the flags would say it (``"everything"`` when empty)."""
    parts = []
    if wanted.outcomes:
        parts.append("outcome " + ",".join(sorted(wanted.outcomes)))
    if wanted.statuses:
        parts.append("status " + ",".join(
            f"{low // 100}xx" if high - low == 99 else str(low)
            for low, high in wanted.statuses))
    if wanted.path:
        parts.append(f"path {wanted.path}*")
    if wanted.client is not None:
        parts.append(f"client {wanted.client}")
    if wanted.host:
        parts.append(f"host {wanted.host}")
    return ", ".join(parts) or "everything"


def _outcomes(text: str) -> frozenset[str]:
    found: set[str] = set()
    for word in _words(text):
        if word in ALIASES:
            found |= ALIASES[word]
        elif word in OUTCOMES:
            found.add(word)
        else:
            choices = ", ".join(sorted(OUTCOMES | ALIASES.keys()))
            raise FilterError("outcome", f"unknown outcome {word!r}; one of {choices}")
    return frozenset(found)


def _statuses(text: str) -> tuple[tuple[int, int], ...]:
    ranges = []
    for word in _words(text):
        if len(word) == 3 and word[0] in "12345" and word[1:] == "xx":
            low = int(word[0]) * 100
            ranges.append((low, low + 99))
        elif len(word) == 3 and word.isdigit() and 100 <= int(word) <= 599:
            ranges.append((int(word), int(word)))
        else:
            raise FilterError("status", f"expected a code such as 502 or a class such as "
                                        f"5xx, got {word!r}")
    return tuple(ranges)


def _client(text: str) -> Network | None:
    if not text:
        return None
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise FilterError("client", f"expected an address or a network such as "
                                    f"10.0.0.0/8, got {text!r}") from None


def _words(text: str) -> list[str]:
    return [word for word in (part.strip().lower() for part in text.split(",")) if word]


def _within(address: str, network: Network) -> bool:
    try:
        return ipaddress.ip_address(address) in network
    except ValueError:
        return False

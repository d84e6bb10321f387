"""Parsers of setting values: each reads a TOML value, an environment string or a CLI
value and returns the typed value, or raises :class:`ValueError` saying what was
expected (the caller names the setting and where the value came from).

Invariant: a parser raises only :class:`ValueError`, and ``optional(parse)`` reads
``None`` and blank text as "not set".
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from stoker.config.units import parse_duration, parse_size
from stoker.http.forwarded import OVERRIDE_FIELDS

T = TypeVar("T")

def url(value: Any) -> str:
    text = str(value).strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"expected an http:// or https:// URL, got {text!r}")
    return text.rstrip("/")


def address(value: Any) -> str:
    text = str(value).strip()
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected HOST:PORT (e.g. 127.0.0.1:8080), got {text!r}")
    return text


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def choice(*options: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        text = str(value).strip().lower()
        if text not in options:
            raise ValueError(f"expected one of {', '.join(options)}, got {value!r}")
        return text

    return parse


def str_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        items = [part.strip() for part in value.split(",")]
    elif isinstance(value, list | tuple):
        items = [str(part).strip() for part in value]
    else:
        raise ValueError(f"expected a list of strings, got {value!r}")
    return tuple(item for item in items if item)


def paths(value: Any) -> tuple[str, ...]:
    """URL paths (``/``, ``/blog/``): each starts with one ``/``, without spaces or control
    characters."""
    items = str_list(value)
    for item in items:
        if not item.startswith("/") or item.startswith("//") or re.search(r"[\x00-\x20\x7f]",
                                                                          item):
            raise ValueError(f"expected paths such as \"/\" or \"/blog/\", got {item!r}")
    return tuple(dict.fromkeys(items))


def override_fields(value: Any) -> tuple[str, ...]:
    """Names of :data:`~stoker.http.forwarded.OVERRIDE_FIELDS`, lower-cased."""
    names = tuple(dict.fromkeys(item.lower() for item in str_list(value)))
    unknown = [name for name in names if name.encode("latin-1") not in OVERRIDE_FIELDS]
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: not a field Stoker drops; expected some of "
                         f"{', '.join(sorted(name.decode() for name in OVERRIDE_FIELDS))}")
    return names


def networks(value: Any) -> tuple[str, ...]:
    items = str_list(value)
    for item in items:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address or CIDR network") from None
    return items


def optional(parse: Callable[[Any], T]) -> Callable[[Any], T | None]:
    @functools.wraps(parse)  # inspect.unwrap finds ``parse`` (see rendering.toml_value)
    def wrapped(value: Any) -> T | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return parse(value)

    return wrapped


def text(value: Any) -> str:
    return str(value)


CACHE_NAME_PATTERN = re.compile(r"[A-Za-z*][A-Za-z0-9!#$%&'*+\-.^_`|~:/]{0,63}")


def cache_name(value: Any) -> str:
    """An RFC 8941 token of at most 64 characters (RFC 9211 §2: Cache-Status names the
    cache with one; it is written into ``Via`` too), so no response head can be broken
    by it."""
    text = str(value)
    if not CACHE_NAME_PATTERN.fullmatch(text):
        raise ValueError(f"expected a token such as \"stoker\" or \"edge-1\" (a letter, "
                         f"then letters, digits or -._:/ at most 64 in all), got {text!r}")
    return text


def path(value: Any) -> Path:
    return Path(str(value)).expanduser()


def seconds(value: Any) -> float:
    return parse_duration(value)


def positive_seconds(value: Any) -> float:
    found = parse_duration(value)
    if found <= 0:
        raise ValueError(f"expected a duration above 0 such as '90d', got {value!r}")
    return found


def size(value: Any) -> int:
    return parse_size(value)


def whole(value: Any) -> int:
    if isinstance(value, bool) or not str(value).strip().isdigit():
        raise ValueError(f"expected a whole number (0 or more), got {value!r}")
    return int(value)


def urls(value: Any) -> tuple[str, ...]:
    return tuple(url(item) for item in str_list(value))


def variants(value: Any) -> tuple[tuple[tuple[str, str], ...], ...]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError("expected a JSON list of header tables, e.g. "
                             '[{"accept-encoding": "gzip, br"}]') from None
    if not isinstance(value, list) or not value or not all(
            isinstance(table, dict) and all(isinstance(k, str) and isinstance(v, str)
                                            for k, v in table.items()) for table in value):
        raise ValueError(f"expected a non-empty list of header tables, got {value!r}")
    return tuple(tuple((name.lower(), text) for name, text in table.items())
                 for table in value)


CREDENTIAL_KINDS = ("header", "cookie")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_NOT_CREDENTIALS = frozenset({
    "host", "cookie", "authorization", "proxy-authorization", "content-length",
    "transfer-encoding", "connection", "keep-alive", "te", "trailer", "upgrade",
    "proxy-connection", "expect", "if-none-match", "if-modified-since", "range"})
"""Headers a warm credential may not be: the request's framing, its target, the
revalidation the pipeline makes, and ``Authorization`` (a shared cache stores no answer
to it, RFC 9111 §3.5) and ``Cookie`` (a ``cookie:`` credential is one cookie in it)."""


def credential_names(value: Any) -> tuple[str, ...]:
    """``kind:name`` items (``header:x-bypass-maintenance``, ``cookie:age_ok``); header
    names lower-cased, cookie names kept as written."""
    found = []
    for item in str_list(value):
        kind, sep, name = item.partition(":")
        kind = kind.strip().lower()
        name = name.strip()
        if not sep or kind not in CREDENTIAL_KINDS or not _TOKEN.fullmatch(name):
            raise ValueError(f"{item!r}: expected header:NAME or cookie:NAME (NAME an HTTP "
                             "token, e.g. header:x-bypass-maintenance)")
        if kind == "header" and name.lower() in _NOT_CREDENTIALS:
            raise ValueError(f"{item!r}: {name} cannot be a warm credential"
                             + (" (use cookie:NAME)" if name.lower() == "cookie" else ""))
        found.append(f"{kind}:{name.lower() if kind == 'header' else name}")
    return tuple(dict.fromkeys(found))


def positive_int(value: Any) -> int:
    if isinstance(value, bool) or not str(value).strip().isdigit() or int(value) < 1:
        raise ValueError(f"expected a whole number of at least 1, got {value!r}")
    return int(value)


def redis_url(value: Any) -> str:
    """A ``redis://`` (or ``rediss://``) URL with a host."""
    text = str(value).strip()
    parts = urlsplit(text)
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        raise ValueError(f"expected redis://host:port/db, got {value!r}")
    return text


def process_count(value: Any) -> int:
    """A number of processes, at least 1; ``auto``: one per core this process may use."""
    if str(value).strip().lower() == "auto":
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
    return positive_int(value)


def origin_slots(value: Any) -> int:
    slots = positive_int(value)
    if slots < 2:
        raise ValueError(f"expected at least 2 (one slot is always kept for visitors, "
                         f"warm visits need another), got {value!r}")
    return slots

"""Configuration: defaults < ``stoker.toml`` < ``STOKER_*`` environment < CLI flags.

Every setting is declared once in :data:`FIELDS` with its parser and help
text; the same parser reads TOML values, environment strings and CLI values,
so a setting means the same thing wherever it comes from.

Invariants: an unknown key (in the file or as a ``STOKER_*`` variable) or a
bad value raises :class:`SettingsError` whose message names the setting and
where it came from; a returned :class:`Settings` is fully validated.
"""

from __future__ import annotations

import functools
import inspect
import ipaddress
import json
import os
import re
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from stoker.http.site_hosts import SiteHosts
from stoker.presets import NAMES as PRESET_NAMES
from stoker.rules import Rule, parse_rules
from stoker.units import format_duration, format_size, parse_duration, parse_size

ENV_PREFIX = "STOKER_"
# Variables read by client commands (purge, jobs), not by the server's settings.
CLIENT_ENV = frozenset({"STOKER_CONFIG", "STOKER_ADMIN_URL"})
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class SettingsError(ValueError):
    """A configuration problem, phrased for the person who has to fix it."""


def _url(value: Any) -> str:
    text = str(value).strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"expected an http:// or https:// URL, got {text!r}")
    return text.rstrip("/")


def _address(value: Any) -> str:
    text = str(value).strip()
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected HOST:PORT (e.g. 127.0.0.1:8080), got {text!r}")
    return text


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def _choice(*options: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        text = str(value).strip().lower()
        if text not in options:
            raise ValueError(f"expected one of {', '.join(options)}, got {value!r}")
        return text

    return parse


def _str_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        items = [part.strip() for part in value.split(",")]
    elif isinstance(value, list | tuple):
        items = [str(part).strip() for part in value]
    else:
        raise ValueError(f"expected a list of strings, got {value!r}")
    return tuple(item for item in items if item)


def _networks(value: Any) -> tuple[str, ...]:
    items = _str_list(value)
    for item in items:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address or CIDR network") from None
    return items


def _optional(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    @functools.wraps(parse)  # inspect.unwrap finds ``parse`` (see toml_value)
    def wrapped(value: Any) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return parse(value)

    return wrapped


def _text(value: Any) -> str:
    return str(value)


_CACHE_NAME = re.compile(r"[A-Za-z*][A-Za-z0-9!#$%&'*+\-.^_`|~:/]{0,63}")


def _cache_name(value: Any) -> str:
    """An RFC 8941 token of at most 64 characters (RFC 9211 §2: Cache-Status names the
    cache with one; it is written into ``Via`` too), so no response head can be broken
    by it."""
    text = str(value)
    if not _CACHE_NAME.fullmatch(text):
        raise ValueError(f"expected a token such as \"stoker\" or \"edge-1\" (a letter, "
                         f"then letters, digits or -._:/ at most 64 in all), got {text!r}")
    return text


def _path(value: Any) -> Path:
    return Path(str(value)).expanduser()


def _seconds(value: Any) -> float:
    return parse_duration(value)


def _bytes(value: Any) -> int:
    return parse_size(value)


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not str(value).strip().isdigit():
        raise ValueError(f"expected a whole number (0 or more), got {value!r}")
    return int(value)


def _urls(value: Any) -> tuple[str, ...]:
    return tuple(_url(item) for item in _str_list(value))


DEFAULT_VARIANTS: tuple[tuple[tuple[str, str], ...], ...] = ((
    ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
    ("accept-encoding", "gzip, deflate, br, zstd"),
),)
"""One typical browser request."""


def _variants(value: Any) -> tuple[tuple[tuple[str, str], ...], ...]:
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


def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not str(value).strip().isdigit() or int(value) < 1:
        raise ValueError(f"expected a whole number of at least 1, got {value!r}")
    return int(value)


def _origin_slots(value: Any) -> int:
    slots = _positive_int(value)
    if slots < 2:
        raise ValueError(f"expected at least 2 (one slot is always kept for visitors, "
                         f"warm visits need another), got {value!r}")
    return slots


@dataclass(frozen=True)
class Field:
    """One setting: how to parse it and what it means."""

    parse: Callable[[Any], Any]
    help: str


FIELDS: dict[str, Field] = {
    "origin": Field(_optional(_url), "Origin base URL to cache, e.g. http://127.0.0.1:9000"),
    "origin_host": Field(
        _optional(_text), "Host header sent to the origin (default: the client's Host)"
    ),
    "listen": Field(_address, "Public proxy listener HOST:PORT"),
    "admin_listen": Field(_address, "Admin API/dashboard listener HOST:PORT"),
    "admin_token": Field(_optional(_text), "Bearer token required by the admin API"),
    "data_dir": Field(_path, "Directory for the SQLite files and large cached bodies"),
    "database_url": Field(
        _optional(_text), "postgresql://… for queue/runs/deadlines (default: SQLite in data_dir)"
    ),
    "server": Field(_choice("stoker", "granian"),
                    "HTTP server that runs the proxy (stoker: its own HTTP/1.1 front, fastest "
                    "hits; granian: HTTP/1.1 and HTTP/2, for clients that speak h2c)"),
    "l1_max_bytes": Field(_bytes, "Memory for cached pages and per-URL tables, e.g. 256MiB"),
    "l2_max_bytes": Field(_bytes, "Persistent (L2) cache bound, e.g. 4GiB"),
    "body_file_threshold": Field(_bytes, "Bodies larger than this are stored in files"),
    "max_object_bytes": Field(_bytes, "Responses larger than this are passed through, not stored"),
    "default_swr": Field(_seconds, "stale-while-revalidate window when the origin gives none"),
    "default_sie": Field(_seconds, "stale-if-error window when the origin gives none"),
    "keep": Field(_seconds, "Keep expired entries with validators this long for revalidation"),
    "origin_timeout": Field(_seconds, "Longest wait on the origin: to connect, to take the "
                            "request body, for each piece of its answer"),
    "collapse_timeout": Field(_seconds, "How long collapsed requests wait for the leader"),
    "client_body_timeout": Field(_seconds, "Longest pause while a client sends its request "
                                 "body (then 408); bodies are read whole before the origin "
                                 "is asked"),
    "client_max_body_size": Field(_bytes, "Largest request body accepted (then 413); "
                                  "beyond 64 KiB it waits in a temporary file"),
    "cache_name": Field(_cache_name, "Name used in Cache-Status and Via (a token)"),
    "tag_headers": Field(_str_list, "Response headers carrying cache tags"),
    "strip_tag_headers": Field(_bool, "Remove tag headers from responses to clients"),
    "honor_client_no_cache": Field(
        _bool, "Let a client's Cache-Control: no-cache force revalidation"
    ),
    "purge_hosts": Field(
        _str_list, "Hosts purge URLs may name, e.g. www.example.com (empty: any host)"
    ),
    "purge_allow": Field(
        _networks, "Client IPs/CIDRs allowed to send PURGE to the proxy (empty: PURGE disabled)"
    ),
    "trusted_proxies": Field(
        _networks, "Peers (IPs/CIDRs) whose X-Forwarded-Proto/-For and Forwarded are believed"
    ),
    "max_variants": Field(_positive_int, "Most Vary variants kept per URL (least recently "
                                         "used dropped)"),
    "shutdown_timeout": Field(
        _seconds, "On SIGTERM: time to flush L2 writes and drain background work, then give up"
    ),
    "l2_queue_max_bytes": Field(
        _optional(_bytes), "Bound of cache writes queued for L2 (default: 1/16 of "
        "l1_max_bytes, 1-64 MiB, taken from it); beyond it the oldest queued are dropped"
    ),
    "l2_write_timeout": Field(
        _seconds, "How long a purge or flush waits for a failing L2 before reporting an error"
    ),
    "l2_inline_reads": Field(
        _bool, "Read L2 hits on the event loop (fast); false on a slow or network disk, "
        "whose reads would stall every request"
    ),
    "preset": Field(_optional(_choice(*PRESET_NAMES)), "Platform preset expanded into the "
                    "rules (stoker settings --preset NAME prints it)"),
    "stopgap_header": Field(
        _text, "Response header marking an origin's placeholder page: never stored, revisited"
    ),
    "stopgap_delay": Field(_seconds, "Wait before a warm run revisits a stopgap page"),
    "origin_max_concurrency": Field(
        _origin_slots, "Most origin requests in flight at once, visitors' misses and warm "
        "visits together; visitors first, warm visits never take the last quarter"
    ),
    "warm_max_concurrency": Field(
        _positive_int, "Most warm visits in flight at once; below it the warmer adapts to "
        "the origin's latency, 429 and 503"
    ),
    "site_url": Field(_urls, "The public site as visitors see it (scheme + host), one or "
                      "more: every warm visit uses it (default: the public listener)"),
    "site_aliases": Field(_str_list, "Other hosts sitemaps may name for the same site "
                          "(e.g. the origin's own address): mapped onto site_url"),
    "warm_max_urls": Field(_positive_int, "Most URLs one warm run visits"),
    "warm_workers": Field(_whole, "Warm visits this process runs at once (0: no warming "
                          "here; stoker worker can do it)"),
    "warm_variants": Field(_variants, "Request headers of each variant a URL is warmed "
                           "with, e.g. [{ \"accept-encoding\" = \"gzip, br\" }]"),
    "rewarm_delay": Field(_seconds, "Re-warm purged URLs this long after the last purge"),
    "rewarm_max_wait": Field(_seconds, "... but at most this long after the first purge"),
    "warm_on_start": Field(_choice("empty", "always", "never"), "A full warm run when "
                           "Stoker starts: empty (when the cache holds nothing, e.g. a new "
                           "data_dir), always, or never"),
    "refresh_interval": Field(_seconds, "Full warm run this long after the last one "
                              "finished (0: no daily refresh)"),
    "keep_stale": Field(_seconds, "Keep entries past freshness this long and serve them when "
                        "the origin fails (not past must-revalidate/no-cache/s-maxage)"),
    "access_log": Field(_optional(_text), "Access log: - (standard output) or a file path "
                        "(default: off)"),
    "access_log_format": Field(_choice("combined", "json"), "combined (with the cache "
                               "status appended) or json"),
    "log_redact_query": Field(_str_list, "Query parameters whose values the access log "
                              "never writes"),
    "tls_cert": Field(_optional(_path), "PEM certificate chain: the public listener speaks "
                      "HTTPS (HTTP/2 by ALPN) with tls_key"),
    "tls_key": Field(_optional(_path), "PEM private key of tls_cert"),
    "compress": Field(_bool, "Store br and gzip forms of compressible responses (text, JSON, "
                      "JS, SVG, XML over 1 KiB, inline bodies), made once when first accepted, "
                      "and serve the best one accepted"),
}


@dataclass(frozen=True)
class Settings:
    """Validated configuration for every Stoker command."""

    origin: str | None = None
    origin_host: str | None = None
    listen: str = "127.0.0.1:8080"
    admin_listen: str = "127.0.0.1:8081"
    admin_token: str | None = None
    data_dir: Path = Path(".stoker")
    database_url: str | None = None
    server: str = "stoker"
    l1_max_bytes: int = 256 * 1024 * 1024
    l2_max_bytes: int = 4 * 1024 * 1024 * 1024
    body_file_threshold: int = 256 * 1024
    max_object_bytes: int = 1024 * 1024 * 1024
    default_swr: float = 0.0
    default_sie: float = 0.0
    keep: float = 3600.0
    origin_timeout: float = 30.0
    collapse_timeout: float = 15.0
    client_body_timeout: float = 60.0
    client_max_body_size: int = 1024 * 1024 * 1024
    cache_name: str = "stoker"
    tag_headers: tuple[str, ...] = ("surrogate-key", "cache-tag")
    strip_tag_headers: bool = True
    honor_client_no_cache: bool = False
    purge_hosts: tuple[str, ...] = ()
    purge_allow: tuple[str, ...] = ()
    trusted_proxies: tuple[str, ...] = ("127.0.0.0/8", "::1")
    max_variants: int = 32
    shutdown_timeout: float = 10.0
    l2_queue_max_bytes: int | None = None
    l2_write_timeout: float = 10.0
    l2_inline_reads: bool = True
    preset: str | None = None
    stopgap_header: str = "X-Stoker-Stopgap"
    stopgap_delay: float = 20.0
    origin_max_concurrency: int = 16
    warm_max_concurrency: int = 8
    site_url: tuple[str, ...] = ()
    site_aliases: tuple[str, ...] = ()
    warm_max_urls: int = 50_000
    warm_workers: int = 4
    warm_variants: tuple[tuple[tuple[str, str], ...], ...] = DEFAULT_VARIANTS
    rewarm_delay: float = 60.0
    rewarm_max_wait: float = 300.0
    refresh_interval: float = 86_400.0
    warm_on_start: str = "empty"
    keep_stale: float = 86_400.0
    access_log: str | None = None
    access_log_format: str = "combined"
    log_redact_query: tuple[str, ...] = ("token", "key", "api_key", "password", "secret",
                                         "signature", "sig", "code", "auth")
    tls_cert: Path | None = None
    tls_key: Path | None = None
    compress: bool = True
    rules: tuple[Rule, ...] = field(default=())

    @property
    def site_urls(self) -> tuple[str, ...]:
        """Where warm visits go: ``site_url``, else the public listener (a wildcard
        bind reached on loopback)."""
        if self.site_url:
            return self.site_url
        host, _, port = self.listen.rpartition(":")
        host = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "[::]": "[::1]"}.get(host, host)
        return (f"http://{host}:{port}",)

    @property
    def sqlite_path(self) -> Path:
        """The embedded database file."""
        return self.data_dir / "stoker.db"

    def require_origin(self) -> str:
        """The origin URL, or a clear error saying how to give one."""
        if self.origin is None:
            raise SettingsError(
                "no origin configured: pass --origin URL, set STOKER_ORIGIN, "
                "or add origin = \"http://…\" to stoker.toml"
            )
        return self.origin

    @property
    def site_hosts(self) -> SiteHosts:
        """The site's own hosts (``site_url``, ``purge_hosts``, the listener; never
        ``origin_host``) and its ``site_aliases``: what purges cover."""
        return SiteHosts.of(site_urls=self.site_url, purge_hosts=self.purge_hosts,
                            listen=self.listen, aliases=self.site_aliases)

    def require_data_dir(self) -> None:
        """``data_dir`` exists (created, with its parents, if missing) and is a writable
        directory; else a :class:`SettingsError` naming ``data_dir`` and what is wrong."""
        path = self.data_dir
        self.refuse_data_dir_under_a_file()
        try:
            path.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=path):
                return  # a write works: the database and body files will be written here
        except OSError as error:
            raise SettingsError(f"data_dir: {path} is not usable ({error.strerror or error}); "
                                "make it a directory Stoker may write to, or point data_dir "
                                "elsewhere") from None

    def refuse_data_dir_under_a_file(self) -> None:
        """A :class:`SettingsError` when ``data_dir`` is a file or lies under one (checked
        without creating anything)."""
        path = self.data_dir
        for place in (path, *path.parents):
            if place.exists():
                if not place.is_dir():
                    where = "a file" if place == path else "under a file"
                    raise SettingsError(f"data_dir: {path} is {where}, not a directory; "
                                        "point data_dir (or --data-dir) at a directory")
                return

    def require_tls_pair(self) -> None:
        """Both ``tls_cert`` and ``tls_key``, or neither, and readable."""
        if (self.tls_cert is None) != (self.tls_key is None):
            raise SettingsError("tls_cert and tls_key go together: set both (PEM files) for "
                                "HTTPS on the public listener, or neither")
        for name, path in (("tls_cert", self.tls_cert), ("tls_key", self.tls_key)):
            if path is not None and not path.is_file():
                raise SettingsError(f"{name}: {path} is not a readable file")

    def require_safe_admin(self) -> None:
        """Refuse an admin API reachable beyond this machine without a token."""
        if self.admin_token is None and not is_loopback_listen(self.admin_listen):
            raise SettingsError(
                f"admin_listen is {self.admin_listen}, which is not a loopback address, and no "
                "admin_token is set: anyone who can reach it could purge the cache. Set "
                "--admin-token / STOKER_ADMIN_TOKEN / admin_token in stoker.toml, or listen on "
                "127.0.0.1")


def is_loopback_listen(address: str) -> bool:
    """True when ``HOST:PORT`` binds only a loopback interface."""
    return is_loopback_host(address.rpartition(":")[0])


def is_loopback_host(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    host = host.strip().strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def admin_url(settings: Settings, env: Mapping[str, str] | None = None) -> str:
    """Where client commands find the admin API: ``STOKER_ADMIN_URL``, else the
    configured ``admin_listen`` (a wildcard bind is reached on loopback)."""
    env = os.environ if env is None else env
    if env.get("STOKER_ADMIN_URL"):
        return env["STOKER_ADMIN_URL"].rstrip("/")
    host, _, port = settings.admin_listen.rpartition(":")
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host in ("::", "[::]"):
        host = "[::1]"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def _apply(values: dict[str, Any], key: str, raw: Any, source: str) -> None:
    spec = FIELDS.get(key)
    if spec is None:
        known = ", ".join(sorted([*FIELDS, "rule"]))
        raise SettingsError(f"unknown setting {key!r} in {source} (known settings: {known})")
    try:
        values[key] = spec.parse(raw)
    except ValueError as error:
        raise SettingsError(f"bad value for {key!r} in {source}: {error}") from None


def _from_file(path: Path, values: dict[str, Any]) -> Any:
    """Apply the file's settings to ``values``; return its ``rule`` tables, unparsed."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise SettingsError(f"cannot read config file {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(f"config file {path} is not valid TOML: {error}") from None
    rules = document.pop("rule", [])
    for key, raw in document.items():
        _apply(values, key, raw, str(path))
    return rules


def _parse_rules(tables: Any, preset: str | None, path: Path | None) -> tuple[Rule, ...]:
    try:
        return parse_rules(tables, preset)
    except ValueError as error:
        raise SettingsError(f"{path or 'rules'}: {error}") from None


def _from_env(env: Mapping[str, str], values: dict[str, Any]) -> None:
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX) or name in CLIENT_ENV:
            continue
        _apply(values, name[len(ENV_PREFIX) :].lower(), raw, f"environment variable {name}")


def find_config(config_path: Path | None, env: Mapping[str, str]) -> Path | None:
    """The config file to read: the flag, then ``STOKER_CONFIG``, then ``./stoker.toml``."""
    if config_path is not None:
        return config_path
    if env.get("STOKER_CONFIG"):
        return Path(env["STOKER_CONFIG"])
    default = Path("stoker.toml")
    return default if default.is_file() else None


def load_settings(
    *,
    config_path: Path | None = None,
    cli: Mapping[str, object] | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Merge every source in precedence order and validate the result."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    tables: Any = []
    path = find_config(config_path, env)
    if path is not None:
        if not path.is_file():
            raise SettingsError(f"config file {path} does not exist")
        tables = _from_file(path, values)
    _from_env(env, values)
    for key, raw in (cli or {}).items():
        if raw is not None:
            _apply(values, key, raw, f"--{key.replace('_', '-')}")
    rules = _parse_rules(tables, values.get("preset"), path)
    return replace(Settings(rules=rules), **values)


def settings_from(values: Mapping[str, object], rules: tuple[Rule, ...] = ()) -> Settings:
    """Settings from code (e.g. the middleware's keyword arguments), validated like a file.

    A ``preset`` expands into the rules only when no ``rules`` are given: parsed rules
    cannot take it, their tables can (``parse_rules(tables, preset=...)``).
    """
    parsed: dict[str, Any] = {}
    for key, raw in values.items():
        _apply(parsed, key, raw, "keyword arguments")
    preset = parsed.get("preset")
    if preset is not None and rules:
        raise SettingsError(
            f"preset={preset!r} cannot be applied to parsed rules: pass "
            f"rules=stoker.rules.parse_rules(tables, preset={preset!r}) instead")
    if preset is not None:
        rules = parse_rules([], preset)
    return replace(Settings(rules=rules), **parsed)


class Described(NamedTuple):
    """One setting as ``stoker settings`` shows it: values as stoker.toml writes them
    (None: not set)."""

    key: str
    variable: str
    value: str | None
    default: str | None
    help: str


def describe(settings: Settings | None = None) -> list[Described]:
    """Every setting with its value in ``settings`` (default: the defaults), its default,
    its environment variable and its meaning."""
    defaults = Settings()
    settings = settings or defaults
    return [Described(spec.name, f"{ENV_PREFIX}{spec.name.upper()}",
                      toml_value(spec.name, getattr(settings, spec.name)),
                      toml_value(spec.name, getattr(defaults, spec.name)), FIELDS[spec.name].help)
            for spec in fields(Settings) if spec.name in FIELDS]


_SHOWN_AS: dict[Callable[[Any], Any], Callable[[Any], str]] = {
    _seconds: format_duration, _bytes: format_size}


def toml_value(key: str, value: Any) -> str | None:
    """``value`` of setting ``key`` as stoker.toml writes it (durations and sizes in their
    units: ``"1d"``, ``"256MiB"``); None when it is not set."""
    if value is None:
        return None
    show = _SHOWN_AS.get(inspect.unwrap(FIELDS[key].parse))
    return json.dumps(show(value)) if show is not None else _toml(value)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, tuple) and value and all(isinstance(item, tuple) for item in value):
        return "[" + ", ".join("{ " + ", ".join(f"{json.dumps(name)} = {json.dumps(text)}"
                                                for name, text in table) + " }"
                               for table in value) + "]"  # warm_variants: header tables
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return json.dumps(str(value))

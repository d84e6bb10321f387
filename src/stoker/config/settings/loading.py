"""Reading settings: defaults < ``stoker.toml`` < ``STOKER_*`` environment < CLI values.

The one parser of each setting (:data:`~stoker.config.settings.declared.FIELDS`) reads TOML
values, environment strings and CLI values alike, so a setting means the same thing
wherever it comes from.

Invariants: an unknown key (in the file or as a ``STOKER_*`` variable) or a bad value
raises :class:`SettingsError` whose message names the setting and where it came from
(an unknown key also the closest known one, :func:`closest_setting`, when one is close);
a returned :class:`Settings` is fully validated (parsers, then the cross-field checks
its construction runs).
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from stoker.config.rules import Rule, parse_rules, rules_from
from stoker.config.settings.declared import ENV_PREFIX, FIELDS, Settings, SettingsError, flag_name

# Variables read by client commands (purge, jobs), not by the server's settings.
CLIENT_ENV = frozenset({"STOKER_CONFIG", "STOKER_ADMIN_URL"})


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


def closest_setting(key: str, known: Iterable[str]) -> str | None:
    """The known setting ``key`` was most likely meant to be (``difflib``'s closest
    match), or ``None`` when none is close.  Pure."""
    found = difflib.get_close_matches(key, list(known), n=1)
    return found[0] if found else None


def _unknown(key: str, source: str) -> SettingsError:
    """The error for unknown setting ``key`` from ``source``: what it may have meant
    (spelled as the source spells names: ``STOKER_*`` for a variable), then the known."""
    known = sorted([*FIELDS, "rule"])
    meant = closest_setting(key, known)
    if meant is not None and source.startswith("environment variable "):
        meant = ENV_PREFIX + meant.upper()
    hint = f"— did you mean {meant!r}? " if meant is not None else ""
    return SettingsError(f"unknown setting {key!r} in {source} {hint}"
                         f"(known settings: {', '.join(known)})")


def _apply(values: dict[str, Any], key: str, raw: Any, source: str) -> None:
    spec = FIELDS.get(key)
    if spec is None:
        raise _unknown(key, source)
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
            _apply(values, key, raw, flag_name(key))
    _token_from_file(values, env)
    rules = _parse_rules(tables, values.get("preset"), path)
    return Settings(rules=rules, **values)


def token_path(file: Path, env: Mapping[str, str]) -> Path:
    """Where ``admin_token_file`` is read: a relative path in ``$CREDENTIALS_DIRECTORY``
    when that is set (systemd's credentials), else as given.  Pure."""
    directory = env.get("CREDENTIALS_DIRECTORY")
    return Path(directory) / file if directory and not file.is_absolute() else file


def _token_from_file(values: dict[str, Any], env: Mapping[str, str]) -> None:
    """Set ``admin_token`` to the content of ``admin_token_file`` (stripped), when that is
    set; both set, an unreadable file or an empty one is a :class:`SettingsError` naming
    them."""
    file = values.get("admin_token_file")
    if file is None:
        return
    if values.get("admin_token") is not None:
        raise SettingsError("admin_token and admin_token_file are both set: keep one (the "
                            "token, or the file holding it)")
    where = token_path(file, env)
    try:
        token = where.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise SettingsError(f"admin_token_file: cannot read {where}: {reason}") from None
    if not token:
        raise SettingsError(f"admin_token_file: {where} is empty; put the admin token in it")
    values["admin_token"] = token


def settings_from(values: Mapping[str, object], rules: object = ()) -> Settings:
    """Settings from code (e.g. keyword arguments), validated like a file.

    ``rules``: :class:`Rule` objects and rule tables (dicts), validated at once
    (:func:`~stoker.config.rules.rules_from`); anything else is a :class:`SettingsError`
    naming ``rules``.  A ``preset`` expands into rules given as tables (or none), not
    into parsed :class:`Rule` objects.
    """
    parsed: dict[str, Any] = {}
    for key, raw in values.items():
        _apply(parsed, key, raw, "keyword arguments")
    _token_from_file(parsed, os.environ)
    try:
        found = rules_from(rules)
    except ValueError as error:
        raise SettingsError(str(error)) from None
    preset = parsed.get("preset")
    if preset is not None:
        found = _with_preset(rules, found, preset)
    return Settings(rules=found, **parsed)


def _with_preset(given: object, parsed: tuple[Rule, ...], preset: str) -> tuple[Rule, ...]:
    """The rules ``given`` (all tables, or none) expanded by ``preset``."""
    tables = list(given) if isinstance(given, list | tuple) else []
    if not all(isinstance(table, Mapping) for table in tables):
        raise SettingsError(f"preset={preset!r} cannot be applied to Rule objects: give "
                            "the rules as dicts (rules=[{'path': '/', 'ttl': '5m'}]), or "
                            "no rules")
    try:
        return parse_rules([dict(table) for table in tables], preset)
    except ValueError as error:
        raise SettingsError(f"rules: {error}") from None

"""The checks a command asks for before it uses its settings: those that depend on what
the command does (serving needs an origin, a listener's admin API a token) or on the
machine (a writable ``data_dir``, readable TLS files). What can be checked from the
values alone is checked when a :class:`Settings` is made (``declared.py``).

Invariant: each check returns normally or raises one :class:`SettingsError` naming the
setting and saying how to fix it; only :func:`require_data_dir` changes the machine
(it creates ``data_dir``).
"""

from __future__ import annotations

import ipaddress
import tempfile

from stoker.config.settings.declared import Settings, SettingsError

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def require_origin(settings: Settings) -> str:
    """The origin URL, or a clear error saying how to give one."""
    if settings.origin is None:
        raise SettingsError(
            "no origin configured: pass --origin URL, set STOKER_ORIGIN, "
            "or add origin = \"http://…\" to stoker.toml"
        )
    return settings.origin


def require_data_dir(settings: Settings) -> None:
    """``data_dir`` exists (created, with its parents, if missing) and is a writable
    directory; else a :class:`SettingsError` naming ``data_dir`` and what is wrong."""
    path = settings.data_dir
    refuse_data_dir_under_a_file(settings)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            return  # a write works: the database and body files will be written here
    except OSError as error:
        raise SettingsError(f"data_dir: {path} is not usable ({error.strerror or error}); "
                            "make it a directory Stoker may write to, or point data_dir "
                            "elsewhere") from None


def refuse_data_dir_under_a_file(settings: Settings) -> None:
    """A :class:`SettingsError` when ``data_dir`` is a file or lies under one (checked
    without creating anything)."""
    path = settings.data_dir
    for place in (path, *path.parents):
        if place.exists():
            if not place.is_dir():
                where = "a file" if place == path else "under a file"
                raise SettingsError(f"data_dir: {path} is {where}, not a directory; "
                                    "point data_dir (or --data-dir) at a directory")
            return


def require_tls_files(settings: Settings) -> None:
    """``tls_cert`` and ``tls_key``, when set, are readable files (that they come
    together is checked when the settings are made)."""
    for name, path in (("tls_cert", settings.tls_cert), ("tls_key", settings.tls_key)):
        if path is not None and not path.is_file():
            raise SettingsError(f"{name}: {path} is not a readable file")


def require_safe_admin(settings: Settings) -> None:
    """Refuse an admin API reachable beyond this machine without a token."""
    if settings.admin_token is None and not is_loopback_listen(settings.admin_listen):
        raise SettingsError(
            f"admin_listen is {settings.admin_listen}, which is not a loopback address, and "
            "no admin_token is set: anyone who can reach it could purge the cache. Set "
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

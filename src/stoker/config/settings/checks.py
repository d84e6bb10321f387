"""The checks a command asks for before it uses its settings: those that depend on what
the command does (serving needs an origin, a listener's admin API a token) or on the
machine (a writable ``data_dir``, readable TLS files). What can be checked from the
values alone is checked when a :class:`Settings` is made (``declared.py``).

Invariant: each check returns normally or raises one :class:`SettingsError` naming the
setting and saying how to fix it; only :func:`require_data_dir` changes the machine
(it creates ``data_dir``, private: :data:`PRIVATE_DIR`), and :func:`make_data_dir_private`
(what ``stoker serve`` runs, never ``stoker check``) the mode of an existing one.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import stat
import tempfile
from pathlib import Path
from typing import Final

from stoker.config.settings.declared import Settings, SettingsError

log = logging.getLogger("stoker")

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
PRIVATE_DIR: Final = 0o700
"""``data_dir``'s mode: it holds the cache, the audit log and the warm credentials."""
PRIVATE_FILE: Final = 0o600
"""The mode of the SQLite files in ``data_dir`` (created so by the SQLite backend)."""
SIDE_FILES: Final = ("", "-wal", "-shm")
ERROR_PAGE_MAX: Final = 1024 * 1024
"""The largest ``error_page`` accepted, in bytes."""


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
        path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            return  # a write works: the database and body files will be written here
    except OSError as error:
        raise SettingsError(f"data_dir: {path} is not usable ({error.strerror or error}); "
                            "make it a directory Stoker may write to, or point data_dir "
                            "elsewhere") from None


def open_to_others(mode: int) -> bool:
    """Whether a permission ``mode`` grants anything to the group or other users.  Pure."""
    return bool(stat.S_IMODE(mode) & 0o077)


def looser_data_dir(path: Path) -> str | None:
    """What is wrong with an existing ``path``'s mode (``None``: private, or missing).
    Reads only."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if not open_to_others(mode):
        return None
    return (f"mode {stat.S_IMODE(mode):o} lets other users into it (its databases hold "
            f"the audit log and warm credentials); it should be {PRIVATE_DIR:o}")


def make_data_dir_private(settings: Settings) -> None:
    """Tighten an existing ``data_dir`` this process owns to :data:`PRIVATE_DIR` (a
    warning says so; one owned by someone else is only warned about), and the SQLite
    files in it (older ones, made before they were created private) to
    :data:`PRIVATE_FILE`."""
    path = settings.data_dir
    wrong = looser_data_dir(path)
    if wrong is not None and path.stat().st_uid != os.geteuid():
        log.warning("data_dir %s: %s, and it is not this user's to change", path, wrong)
    elif wrong is not None:
        os.chmod(path, PRIVATE_DIR)
        log.warning("data_dir %s: %s; made it %o", path, wrong, PRIVATE_DIR)
    for database in {settings.sqlite_path, settings.cache_path}:
        for one in (Path(f"{database}{side}") for side in SIDE_FILES):
            with contextlib.suppress(OSError):  # missing, or another user's: left be
                if open_to_others(one.stat().st_mode):
                    os.chmod(one, PRIVATE_FILE)


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


def read_error_page(settings: Settings) -> bytes | None:
    """The bytes of ``error_page`` (``None`` when it is not set): a readable file of at
    most :data:`ERROR_PAGE_MAX` bytes, read whole once."""
    page = settings.error_page
    if page is None:
        return None
    try:
        with page.open("rb") as file:
            body = file.read(ERROR_PAGE_MAX + 1)
    except OSError as error:
        why = error.strerror or type(error).__name__
        raise SettingsError(f"error_page: {page} is not a readable file ({why}); point "
                            "error_page (or --error-page, STOKER_ERROR_PAGE) at an HTML "
                            "file") from None
    if len(body) > ERROR_PAGE_MAX:
        raise SettingsError(f"error_page: {page} is larger than 1 MiB; an error page should "
                            "be small (inline its styles, link its images)")
    return body


def require_safe_admin(settings: Settings) -> None:
    """Refuse an admin API reachable beyond this machine without a token."""
    if settings.admin_token is None and not is_loopback_listen(settings.admin_listen):
        raise SettingsError(
            f"admin_listen is {settings.admin_listen}, which is not a loopback address, and "
            "no admin_token is set: anyone who can reach it could purge the cache. Set "
            "--admin-token / STOKER_ADMIN_TOKEN / admin_token in stoker.toml (or a file holding "
            "it: admin_token_file), or listen on 127.0.0.1")


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

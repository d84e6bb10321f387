"""What the ``stoker`` commands share: option types, settings loading, clear exits.

Invariants: a configuration problem prints one sentence saying what to fix and
exits with status 2; a failed call to a running Stoker exits with status 1.  Text
is printed as it is, never read as rich markup (``[[rule]]`` in a message stays):
the consoles here have markup off, and :func:`print_error` colours its prefix only.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from stoker.config.settings import FIELDS, Settings, SettingsError, admin_url, load_settings
from stoker.config.settings.declared import flag_name
from stoker.config.settings.rendering import plain_default
from stoker.server.listeners import run_async

T = TypeVar("T")

def color_system() -> Literal["auto"] | None:
    """Rich's colour system for a console: none at all (no colour, no bold, no italics)
    while ``NO_COLOR`` is set and not empty (https://no-color.org), else detected."""
    return None if os.environ.get("NO_COLOR") else "auto"


console = Console(stderr=True, markup=False, soft_wrap=True, color_system=color_system())
DEMO_DATA_DIR = Path(".stoker/demo")
"""Where ``stoker demo`` keeps its data by default (not the site's ``./.stoker``)."""



def setting_option(key: str) -> Any:
    """The ``--flag`` of setting ``key``: the setting's help, with its default."""
    shown = plain_default(key)
    return typer.Option(flag_name(key), help=FIELDS[key].help + (f" [{shown}]" if shown else ""))


ConfigOpt = Annotated[Path | None, typer.Option(
    "--config", help="stoker.toml to read (default: ./stoker.toml if present, or $STOKER_CONFIG)")]
OriginOpt = Annotated[str | None, setting_option("origin")]
ListenOpt = Annotated[str | None, setting_option("listen")]
AdminListenOpt = Annotated[str | None, setting_option("admin_listen")]
DataDirOpt = Annotated[Path | None, setting_option("data_dir")]
DatabaseUrlOpt = Annotated[str | None, setting_option("database_url")]
TokenOpt = Annotated[str | None, setting_option("admin_token")]
TokenFileOpt = Annotated[Path | None, setting_option("admin_token_file")]
ServerOpt = Annotated[str | None, setting_option("server")]
LogFormatOpt = Annotated[str | None, setting_option("log_format")]
ProcessesOpt = Annotated[str | None, setting_option("processes")]
NodeIdOpt = Annotated[str | None, setting_option("node_id")]
ErrorPageOpt = Annotated[Path | None, setting_option("error_page")]
AdminUrlOpt = Annotated[str | None, typer.Option(
    "--admin-url", envvar="STOKER_ADMIN_URL",
    help="Admin API of the running Stoker [http://<admin_listen>]")]
AdminTokenOpt = Annotated[str | None, typer.Option(
    "--admin-token", envvar="STOKER_ADMIN_TOKEN", help="Bearer token of the admin API")]
HostOpt = Annotated[str | None, typer.Option(
    "--host", help="Host that paths like /x refer to [every host of the site: site_url, "
                   "purge_hosts, the listener]")]


def settings_or_exit(config: Path | None, **cli: Any) -> Settings:
    """Load settings, turning a configuration problem into a clear exit."""
    try:
        return load_settings(config_path=config, cli=cli)
    except SettingsError as error:
        raise usage_error(error) from None


def serve_or_exit(main: Coroutine[Any, Any, T]) -> T:
    """Run a service, turning a configuration problem found at startup into a clear exit;
    what it returned."""
    try:
        return run_async(main)
    except SettingsError as error:
        raise usage_error(error) from None


def announcer(settings: Settings) -> Callable[[str], None]:
    """Where a service's lines (started, stopped, progress) go: the terminal, or the log
    when its lines are JSON (so every line of the stream is one object)."""
    if settings.log_format == "json":
        return logging.getLogger("stoker").info
    return console.print


def admin_client(config: Path | None, url: str | None, token: str | None) -> Any:
    from stoker.admin.client import AdminClient

    settings = settings_or_exit(config)
    return AdminClient(url or admin_url(settings), token or settings.admin_token)


def output() -> Console:
    """A console for a command's output on stdout (markup off, as every console here;
    :func:`color_system`)."""
    return Console(markup=False, soft_wrap=True, color_system=color_system())


def print_error(message: object, to: Console = console) -> None:
    """One ``error: message`` line, ``message`` printed as it is."""
    to.print(Text.assemble(("error:", "red"), f" {message}"))


def fail(error: Exception) -> typer.Exit:
    """Print ``error``; the exit of a failed call to a running Stoker (status 1)."""
    print_error(error)
    return typer.Exit(1)


def usage_error(message: object) -> typer.Exit:
    """Print ``message``; the exit of a configuration or usage problem (status 2)."""
    print_error(message)
    return typer.Exit(2)

"""The ``stoker`` command line.

Every server setting is a flag here, a key in ``stoker.toml`` and a
``STOKER_*`` variable; precedence is flag > variable > file > default
(see :mod:`stoker.settings`).  Errors users can cause print one sentence
saying what to fix and exit with status 2.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from stoker.server import run_async
from stoker.settings import Settings, SettingsError, describe, load_settings

app = typer.Typer(
    help="Stoker keeps a website's page cache hot: a caching reverse proxy with a warmer.",
    no_args_is_help=True, add_completion=False)
console = Console(stderr=True)

ConfigOpt = Annotated[Path | None, typer.Option(
    "--config", help="stoker.toml to read (default: ./stoker.toml if present, or $STOKER_CONFIG)")]
OriginOpt = Annotated[str | None, typer.Option(help="Origin base URL, e.g. http://127.0.0.1:9000")]
ListenOpt = Annotated[str | None, typer.Option(help="Public listener HOST:PORT [127.0.0.1:8080]")]
AdminListenOpt = Annotated[str | None, typer.Option(
    help="Admin listener HOST:PORT [127.0.0.1:8081]")]
DataDirOpt = Annotated[Path | None, typer.Option(
    help="Where the cache database and large bodies live [./.stoker]")]
TokenOpt = Annotated[str | None, typer.Option(help="Bearer token for the admin API")]
ServerOpt = Annotated[str | None, typer.Option(help="HTTP server: granian or uvicorn [granian]")]


def settings_or_exit(config: Path | None, **cli: Any) -> Settings:
    """Load settings, turning a configuration problem into a clear exit."""
    try:
        return load_settings(config_path=config, cli=cli)
    except SettingsError as error:
        console.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from None


def _logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@app.command()
def serve(
    config: ConfigOpt = None, origin: OriginOpt = None, listen: ListenOpt = None,
    admin_listen: AdminListenOpt = None, data_dir: DataDirOpt = None,
    admin_token: TokenOpt = None, server: ServerOpt = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging")] = False,
) -> None:
    """Run the caching proxy in front of --origin."""
    from stoker.service import run_service

    settings = settings_or_exit(config, origin=origin, listen=listen, admin_listen=admin_listen,
                                data_dir=data_dir, admin_token=admin_token, server=server)
    try:
        settings.require_origin()
    except SettingsError as error:
        console.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from None
    _logging(verbose)
    run_async(run_service(settings, announce=console.print))


@app.command()
def demo(
    listen: ListenOpt = None, admin_listen: AdminListenOpt = None,
    origin_listen: Annotated[str, typer.Option(help="Demo origin HOST:PORT")] = "127.0.0.1:9080",
    data_dir: Annotated[Path, typer.Option(help="Data directory")] = Path(".stoker/demo"),
    pages: Annotated[int, typer.Option(help="Pages on the demo site")] = 2000,
    delay: Annotated[float, typer.Option(help="Seconds the origin takes per page")] = 0.05,
    server: ServerOpt = None,
) -> None:
    """Start a slow demo site and Stoker in front of it, on embedded storage."""
    from stoker.service import run_demo

    settings = settings_or_exit(None, origin=f"http://{origin_listen}", listen=listen,
                                admin_listen=admin_listen, data_dir=data_dir, server=server)
    _logging(False)
    run_async(run_demo(settings, origin_listen, pages=pages, delay=delay,
                         announce=console.print))


@app.command("settings")
def show_settings() -> None:
    """List every setting with its default (file key; the variable is STOKER_<KEY>)."""
    from rich.table import Table

    table = Table("setting", "default", "meaning")
    for key, default, meaning in describe():
        table.add_row(key, default, meaning)
    Console().print(table)


def _mount_subcommands() -> None:
    from stoker.jobs.cli import jobs_app

    app.add_typer(jobs_app, name="jobs")


def main() -> None:
    """Console-script entry point."""
    _mount_subcommands()
    app()

"""The ``stoker`` command line.

Every server setting is a flag here, a key in ``stoker.toml`` and a
``STOKER_*`` variable; precedence is flag > variable > file > default
(see :mod:`stoker.config.settings`).  Errors users can cause print one sentence
saying what to fix and exit with status 2 (configuration) or 1 (a call to a
running Stoker failed).  Commands that talk to a running Stoker find it with
``--admin-url`` (``STOKER_ADMIN_URL``, default: the configured admin
listener) and ``--admin-token`` (``STOKER_ADMIN_TOKEN``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from stoker.app.processes import INDEX_FLAG, SUPERVISOR_FLAG, ServingProcess, default_node_id
from stoker.backends.drivers import require_drivers
from stoker.cli.common import (
    DEMO_DATA_DIR,
    AdminListenOpt,
    AdminTokenOpt,
    AdminUrlOpt,
    ConfigOpt,
    DataDirOpt,
    ErrorPageOpt,
    HostOpt,
    ListenOpt,
    LogFormatOpt,
    NodeIdOpt,
    OriginOpt,
    ProcessesOpt,
    ServerOpt,
    TokenFileOpt,
    TokenOpt,
    admin_client,
    announcer,
    console,
    fail,
    output,
    serve_or_exit,
    settings_or_exit,
    usage_error,
)
from stoker.cli.log_lines import setup_logging
from stoker.config.settings import (
    SettingsError,
    load_settings,
    require_origin,
    require_safe_admin,
)
from stoker.config.settings.rendering import markdown_table, settings_toml
from stoker.text import plural
from stoker.version import VERSION

app = typer.Typer(
    help="Stoker keeps a website's page cache hot: a caching reverse proxy with a warmer.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None)


def _print_version(asked: bool) -> None:
    if asked:
        print(f"stoker {VERSION}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option(
        "--version", help="Print Stoker's version and exit", is_eager=True,
        callback=_print_version)] = False) -> None:
    """Stoker keeps a website's page cache hot: a caching reverse proxy with a warmer."""
@app.command()
def serve(
    config: ConfigOpt = None, origin: OriginOpt = None, listen: ListenOpt = None,
    admin_listen: AdminListenOpt = None, data_dir: DataDirOpt = None,
    admin_token: TokenOpt = None, admin_token_file: TokenFileOpt = None,
    server: ServerOpt = None, log_format: LogFormatOpt = None,
    processes: ProcessesOpt = None, node_id: NodeIdOpt = None,
    error_page: ErrorPageOpt = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging")] = False,
    process_index: Annotated[int | None, typer.Option(INDEX_FLAG, hidden=True)] = None,
    supervisor: Annotated[int | None, typer.Option(SUPERVISOR_FLAG, hidden=True)] = None,
) -> None:
    """Run the caching proxy in front of --origin.

    With --processes N (auto: one per core), N serving processes share the listen
    address, the cache tier and the job queue, each with its own memory tier; a purge
    answers once every one of them has it in force.

    SIGHUP reloads stoker.toml: its cache rules, presets, lifetimes and what is stored
    take effect at once, without dropping connections or the cache; the log names each
    change and what needs a restart."""
    from stoker.app.serving import run_service, supervise

    flags = dict(origin=origin, listen=listen, admin_listen=admin_listen, data_dir=data_dir,
                 admin_token=admin_token, admin_token_file=admin_token_file, server=server,
                 log_format=log_format, processes=processes, node_id=node_id,
                 error_page=error_page)
    settings = settings_or_exit(config, **flags)
    try:
        require_origin(settings)
        require_safe_admin(settings)
        require_drivers(settings)
    except SettingsError as error:
        raise usage_error(error) from None
    setup_logging(verbose, settings.log_format)
    if settings.processes > 1 and process_index is None:
        raise typer.Exit(serve_or_exit(supervise(settings, sys.argv[1:],
                                                 announce=announcer(settings))))
    process = None if process_index is None else ServingProcess(
        process_index, settings.processes, settings.node_id or default_node_id(),
        supervisor)
    serve_or_exit(run_service(settings, announce=announcer(settings), reload=lambda: (
        load_settings(config_path=config, cli=flags)), process=process))


@app.command()
def demo(
    listen: ListenOpt = None, admin_listen: AdminListenOpt = None,
    origin_listen: Annotated[str, typer.Option(help="Demo origin HOST:PORT")] = "127.0.0.1:9080",
    data_dir: Annotated[Path, typer.Option(help="Data directory")] = DEMO_DATA_DIR,
    pages: Annotated[int, typer.Option(help="Pages on the demo site")] = 2000,
    delay: Annotated[float, typer.Option(help="Seconds the origin takes per page")] = 0.05,
    server: ServerOpt = None,
) -> None:
    """Start a slow demo site and Stoker in front of it, on embedded storage."""
    from stoker.app.serving import run_demo

    settings = settings_or_exit(None, origin=f"http://{origin_listen}", listen=listen,
                                admin_listen=admin_listen, data_dir=data_dir, server=server)
    try:
        require_safe_admin(settings)
    except SettingsError as error:
        raise usage_error(error) from None
    setup_logging(False, settings.log_format)
    serve_or_exit(run_demo(settings, origin_listen, pages=pages, delay=delay,
                           announce=console.print))


@app.command()
def purge(
    url: Annotated[list[str] | None, typer.Option(
        "--url", help="Purge this URL (every variant); a path uses --host. Repeatable")] = None,
    prefix: Annotated[list[str] | None, typer.Option(
        "--prefix", help="Purge every URL starting with this. Repeatable")] = None,
    tag: Annotated[list[str] | None, typer.Option(
        "--tag", help="Purge every entry with this tag (exact). Repeatable")] = None,
    everything: Annotated[bool, typer.Option(
        "--all", help="Purge everything (bumps the cache version)")] = False,
    soft: Annotated[bool | None, typer.Option(
        "--soft/--hard", help="Mark stale (served while refetched) or delete; neither: as "
                              "the running Stoker's purge_mode says", show_default=False)
    ] = None,
    host: HostOpt = None, config: ConfigOpt = None, admin_url_: AdminUrlOpt = None,
    admin_token: AdminTokenOpt = None,
) -> None:
    """Purge cached pages of a running Stoker by URL, prefix, tag, or everything."""
    from stoker.admin.client import AdminClientError

    if not (url or prefix or tag or everything):
        raise usage_error("nothing to purge: give --url, --prefix, --tag or --all")
    body: dict[str, Any] = {"urls": url or [], "prefixes": prefix or [], "tags": tag or [],
                            "all": everything}
    if soft is not None:
        body["soft"] = soft
    if host:
        body["host"] = host
    try:
        with admin_client(config, admin_url_, admin_token) as client:
            result = client.purge(body)
    except AdminClientError as error:
        raise fail(error) from None
    out = output()
    out.print(f"stoker at {client.base_url}:")
    how = "made stale" if result["soft"] else "deleted"
    if result["scope"]["all"] and not result["soft"]:
        old = plural(result["purged"], "old entry", "old entries")
        out.print(f"purged everything: cache version is now {result['version']}; "
                  f"{old} left to reclaim in the background")
        return
    out.print(f"purged {plural(result['purged'], 'entry', 'entries')} ({how})")
    if result.get("unknown_hosts"):
        out.print(f"note: {', '.join(result['unknown_hosts'])} is not a host of this site "
                  "(site_url, purge_hosts, the listener) nor in site_aliases: if it is the "
                  "site's, add it to site_aliases")
    for shown in result["urls"]:
        out.print(f"  {shown}", highlight=False)
    if result["urls_total"] > len(result["urls"]):
        out.print(f"  … and {plural(result['urls_total'] - len(result['urls']), 'more URL')}")


@app.command()
def entry(
    url: Annotated[str, typer.Argument(help="URL (or path with --host) to look up")],
    host: HostOpt = None, config: ConfigOpt = None, admin_url_: AdminUrlOpt = None,
    admin_token: AdminTokenOpt = None,
) -> None:
    """Show what a running Stoker holds for a URL: variants, tags, windows, tier."""
    from rich.table import Table

    from stoker.admin.client import AdminClientError

    try:
        with admin_client(config, admin_url_, admin_token) as client:
            result = client.entry(url, host)
    except AdminClientError as error:
        raise fail(error) from None
    out = output()
    for key in result["keys"]:
        if not key["variants"]:
            out.print(f"{key['url']}: not cached", highlight=False)
            continue
        table = Table("variant", "state", "ttl", "tags", "size", "tier", title=key["url"])
        for item in key["variants"]:
            table.add_row(item["variant"] or "-", item["state"], f"{item['ttl']:.0f}s",
                          " ".join(item["tags"]), str(item["size"]), "+".join(item["tier"]))
        out.print(table)


def _print_preset(name: str) -> None:
    from stoker.config.presets import expand, to_toml

    try:
        tables = expand([], name)
    except ValueError as error:
        raise usage_error(f"--preset: {error}") from None
    # Plain print: this is TOML to copy, and rich would read [[rule]] as markup.
    print(f'# preset = "{name}" stands for these rules. Your own [[rule]] tables go between\n'
          "# the bypass rules and the last rule, and get its lists and lifetimes.\n")
    print(to_toml(tables), end="")


@app.command("settings")
def show_settings(
    config: Annotated[Path | None, typer.Option(
        "--config", help="Show the values this stoker.toml (with STOKER_* variables) gives")
    ] = None,
    preset: Annotated[str | None, typer.Option(
        help="Print the [[rule]] tables this preset expands to, instead")] = None,
    markdown: Annotated[bool, typer.Option(
        "--markdown", help="Print the settings table of docs/configuration.md (markdown)")] = False,
) -> None:
    """Every setting as stoker.toml lines: its meaning, its variable, its default (with
    --config: the effective value, and the default where it differs)."""
    if preset is not None:
        _print_preset(preset)
        return
    if markdown:
        print(markdown_table())
        return
    settings = settings_or_exit(config) if config is not None else None
    print(settings_toml(settings, config), end="")


def _mount_subcommands() -> None:
    from stoker.cli import log, status, why
    from stoker.cli.check import check, migrate
    from stoker.cli.jobs import jobs_app
    from stoker.cli.warm import mount

    app.command("check")(check)
    app.command("migrate")(migrate)
    app.add_typer(jobs_app, name="jobs")
    mount(app)
    status.mount(app)
    log.mount(app)
    why.mount(app)


def main() -> None:
    """Console-script entry point."""
    _mount_subcommands()
    app()

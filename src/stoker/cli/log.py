"""``stoker log``: the requests a running Stoker answers, live, like varnishlog.

It reads ``GET /api/log`` (:mod:`~stoker.admin.request_log`) from the admin API that
``stoker status`` reads (``--admin-url``, ``--admin-token``), one line per request until
Ctrl-C: time, client, method, host and path, status, outcome (and why), duration, bytes;
``--json``: one JSON object per line.

Invariants: the filters are checked here first, as the server checks them, so a bad one
exits 2 naming its flag; an admin API out of reach or a wrong token exits 1 with one
sentence saying what to change; lines a slow reader lost are said (``… N lines
dropped``), never skipped silently.  The line formatting is pure.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from stoker.cli.common import AdminTokenOpt, AdminUrlOpt, ConfigOpt, admin_client, fail, usage_error
from stoker.proxy.log_filter import FilterError, parse_filter


def line(record: dict[str, Any]) -> str:
    """One request as a line of text.  Pure."""
    when = datetime.fromtimestamp(record["time"], UTC).strftime("%H:%M:%S.%f")[:-3]
    outcome = record["outcome"] + (f" ({record['reason']})" if record["reason"] else "")
    duration = record["duration_ms"]
    took = "-" if duration is None else f"{duration:.1f}ms"
    size = "-" if record["bytes"] is None else f"{record['bytes']}B"
    return (f"{when} {record['client']:<15} {record['method']:<4} "
            f"{record['host']}{record['path']} {record['status']} {outcome} {took} {size}")


def hello_line(hello: dict[str, Any]) -> str:
    """What the stream says it shows, before the first request.  Pure."""
    said = f"showing {hello['filter']}, Ctrl-C to stop"
    if hello["shown"] < hello["processes"]:
        said += (f"; only the requests of {hello['shown']} of the {hello['processes']} "
                 "serving processes")
    return said


def dropped_line(dropped: int) -> str:
    """The line that says lines were lost.  Pure."""
    return f"… {dropped} line{'s' if dropped != 1 else ''} dropped (the reader fell behind)"


def log(
    outcome: Annotated[str | None, typer.Option(
        "--outcome", help="Only these outcomes, comma-separated: hit, miss, pass, bypass, "
                          "error, collapsed, revalidated, stale (stale-while-revalidate "
                          "and stale-if-error)")] = None,
    status: Annotated[str | None, typer.Option(
        "--status", help="Only these statuses, comma-separated codes or classes: 502, "
                         "5xx, 404,5xx")] = None,
    path: Annotated[str | None, typer.Option(
        "--path", help="Only paths starting with this prefix, e.g. /blog")] = None,
    client: Annotated[str | None, typer.Option(
        "--client", help="Only this client address, or network (10.0.0.0/8)")] = None,
    host: Annotated[str | None, typer.Option("--host", help="Only this Host")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="One JSON object per line: time (epoch seconds), client, method, "
                       "host, path, status, outcome, reason, duration_ms, bytes; and "
                       "{\"dropped\": n} where lines were lost")] = False,
    config: ConfigOpt = None, admin_url_: AdminUrlOpt = None, admin_token: AdminTokenOpt = None,
) -> None:
    """Tail the requests a running Stoker answers, live, until Ctrl-C: time, client,
    method, host and path, status, outcome (hit, miss, pass, bypass, error, ... and why),
    duration and bytes, of every serving process. Filters narrow what is shown; nothing
    is logged, nor costs anything, while nobody watches."""
    from stoker.admin.client import AdminClientError

    params = {name: value for name, value in (
        ("outcome", outcome), ("status", status), ("path", path), ("client", client),
        ("host", host)) if value}
    try:
        parse_filter(params)
    except FilterError as error:
        raise usage_error(f"--{error}") from None
    try:
        with admin_client(config, admin_url_, admin_token) as admin:
            _tail(admin.log(params), as_json)
    except AdminClientError as error:
        raise fail(error) from None
    except KeyboardInterrupt:
        return


def _tail(events: Any, as_json: bool) -> None:
    """Print ``events`` as they come, flushed line by line."""
    for event, data in events:
        if event == "request":
            text = json.dumps(data, separators=(",", ":")) if as_json else line(data)
        elif event == "dropped":
            text = json.dumps(data) if as_json else dropped_line(data["dropped"])
        elif event == "hello" and not as_json:
            print(hello_line(data), file=sys.stderr, flush=True)
            continue
        else:
            continue
        print(text, flush=True)


def mount(app: typer.Typer) -> None:
    """Add ``log`` to the ``stoker`` command."""
    app.command("log")(log)
